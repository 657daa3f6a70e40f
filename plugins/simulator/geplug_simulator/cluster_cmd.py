"""``geplug run MODEL --ranks N | --rank-table FILE [--analytic]``: a multi-rank job.

Every rank is a virtual device of the simulator in this process (docs/distributed.md); the
analytic mode derives every rank's timeline from one compile. The simulator offers it to the
core CLI through ``geplug_subcommands`` as ``geplug cluster``; the core's ``geplug run``
hands ``--ranks`` / ``--rank-table`` / ``--analytic`` to it (the core imports no backend).
onnx and the cluster engine are imported when the command runs (CLI start-up stays fast).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping
from typing import Any

from geplug.backend import Subcommand

__all__ = ["cluster_command", "run_cluster"]


def cluster_command() -> Subcommand:
    """``geplug cluster``, offered to the core CLI through ``geplug_subcommands``; ``geplug
    run --ranks/--rank-table/--analytic`` runs its action."""
    return Subcommand(
        name="cluster", summary="run an ONNX model on several virtual ranks (HCCL)",
        description="Run every rank of a job (--ranks N or --rank-table FILE) as a virtual "
                    "device in this process, or derive every rank's timeline from one "
                    "compile (--analytic). The same as geplug run with those options.",
        configure=_configure, action=_cmd_cluster)


def _configure(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = ("examples:\n  geplug cluster model.onnx --product atlas_a2 --ranks 8\n"
                "  geplug run model.onnx --product atlas_a2 --ranks 8   (the same)")
    p.add_argument("model", help="path of an .onnx file")
    p.add_argument("--product", default=None, help="product name or SoC version")
    p.add_argument("--config", default=None, help="session configuration (TOML)")
    p.add_argument("--input", action="append", metavar="NAME=FILE.npy",
                   help="an input array (repeat per input; the path may contain {rank})")
    p.add_argument("--steps", type=int, default=1, help="steps (iterations) to run")
    p.add_argument("--output", default=None, metavar="FILE.npz", help="save the last outputs")
    p.add_argument("--ranks", type=int, default=None, metavar="N",
                   help="run N ranks as virtual devices in one process")
    p.add_argument("--rank-table", default=None, metavar="FILE.json",
                   help="run every rank of this rank table (RANK_TABLE_FILE format)")
    p.add_argument("--analytic", action="store_true",
                   help="derive every rank's timeline from one compile, no numerics")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the rank-dependent random inputs")


def _cmd_cluster(args: argparse.Namespace) -> int:
    from geplug.errors import UsageError

    if args.ranks is None and args.rank_table is None and not args.analytic:
        raise UsageError("geplug cluster needs --ranks N or --rank-table FILE",
                         argument="--ranks")
    if args.steps < 1:
        raise UsageError(f"--steps {args.steps!r}: give a number of steps >= 1",
                         argument="--steps")
    return run_cluster(args)


def _open_system(product: str | None, config: Any, env: Mapping[str, str] | None) -> Any:
    from geplug.runtime.api import open_device

    return open_device(product=product, config=config, env=env)


def _topology(args: argparse.Namespace, product: Any) -> Any:
    from geplug.errors import UsageError
    from geplug.hccl import Topology

    if args.ranks is not None and args.rank_table is not None:
        raise UsageError("give --ranks N or --rank-table FILE, not both", argument="--ranks")
    if args.rank_table is not None:
        return Topology.from_rank_table(product, os.path.abspath(args.rank_table),
                                        dict(os.environ))
    if args.ranks is None:
        raise UsageError("--analytic needs --ranks N or --rank-table FILE",
                         argument="--analytic")
    if args.ranks < 1:
        raise UsageError(f"--ranks {args.ranks}: give a number of ranks >= 1",
                         argument="--ranks")
    return Topology.generated(product, args.ranks)


def _rank_inputs(specs: list[str], rank: int) -> dict[str, Any]:
    from geplug.errors import GeplugError, UsageError
    from geplug.limits import escape_controls
    from geplug.npy import read_npy

    feeds: dict[str, Any] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        shown = repr(escape_controls(spec))
        if not sep or not name or not path:
            raise UsageError(f"--input {shown}: expected NAME=FILE.npy (the path may "
                             "contain {rank})", argument="--input")

        def fail(message: str, shown: str = shown) -> GeplugError:
            return GeplugError(f"--input {shown} for rank {rank}: {message} (one file per "
                               "rank: {rank} in the path)")

        feeds[name] = read_npy(path.replace("{rank}", str(rank)), fail=fail)
    return feeds


def run_cluster(args: argparse.Namespace) -> int:
    """Run the job the arguments describe; prints a summary per rank; returns 0."""
    from geplug.errors import GeplugError
    from geplug.plugin import get_manager
    from geplug_simulator.cluster import (
        ClusterJob,
        run_analytic,
        seeded_inputs,
        server_config,
    )

    open_system = _open_system
    from geplug.config.parse import parse_source
    from geplug.hccl import read_faults, read_settings

    config = args.config
    if config is not None and not os.path.isfile(config):
        raise GeplugError(f"--config {config!r}: no such file; give a TOML session "
                          "configuration")
    name = args.product or parse_source(config)[0].soc_version
    if not name:
        installed = [p.name for p in get_manager().products(strict=False)]
        if len(installed) != 1:
            print("geplug: error: name a product with --product P (installed: "
                  + ", ".join(installed) + ")", file=sys.stderr)
            return 2
        name = installed[0]
    product = get_manager().products(strict=False).get(str(name))
    topo = _topology(args, product)
    step_s = product.topology.exec_timeout_step_s if product.topology else 0
    settings = read_settings(os.environ, exec_timeout_step_s=step_s)
    faults = read_faults(os.environ)
    table = os.path.abspath(args.rank_table) if args.rank_table else ""

    def open_rank(env: Any) -> Any:
        return open_system(name, server_config(config, topo, int(env["RANK_ID"])), env)

    began = time.perf_counter()
    if args.analytic:
        shown = max(1, topo.size // 10)

        def progress(r: int) -> None:
            if sys.stderr.isatty() and (r + 1) % shown == 0:
                print(f"  rank {r + 1}/{topo.size}", file=sys.stderr)

        summary = run_analytic(topo, open_rank, args.model, steps=args.steps,
                               settings=settings, faults=faults, env=dict(os.environ),
                               rank_table=table, progress=progress)
        print(f"analytic job: {topo.size} ranks on {topo.servers} server(s) of "
              f"{product.name}, {args.steps} step(s), step time "
              f"{summary['step_time_us']:.1f} us (slowest rank), "
              f"{time.perf_counter() - began:.1f} s")
        for cname, c in summary["collectives"].items():
            print(f"  {cname}: {c['algorithm']}, {c['duration_us']:.1f} us")
        _print_prof(config, topo.size)
        return 0
    with ClusterJob(topo, open_rank, settings=settings, faults=faults, env=dict(os.environ),
                    rank_table=table) as job:
        split = job.compile(args.model)
        feeds = []
        for r, rank in enumerate(job.ranks):
            if args.input:
                feeds.append(_rank_inputs(args.input, r))
            else:
                feeds.append(seeded_inputs(rank.compiled, args.seed, r,
                                           [c.output for c in split.collectives]))
        if not args.input:
            print(f"no --input given: seeded random inputs per rank "
                  f"(numpy default_rng([{args.seed}, rank]))")
        outputs: list[dict[str, Any]] = []
        for step in range(args.steps):
            outputs = job.run(feeds, step)
        print(f"{job.ranks[0].compiled.name} on {topo.size} ranks ({topo.servers} server(s) "
              f"of {product.name}): {args.steps} step(s), {len(split.collectives)} "
              f"collective(s)")
        for coll in split.collectives:
            cost = next((v for k, v in job._costs.items() if k[0] == coll.name), None)
            if cost is not None:
                print(f"  {coll.hccl_name}: {cost.algorithm}, {cost.duration_us:.1f} us, "
                      f"{cost.nbytes / 1e6:g} MB per rank")
        for r, out in enumerate(outputs):
            shapes = ", ".join(f"{k}{list(v.shape)}" for k, v in out.items())
            print(f"  rank {r}: {shapes}")
        if args.output:
            import numpy as np

            from geplug.atomic import write_atomic

            arrays = {f"rank{r}/{k}": v for r, out in enumerate(outputs) for k, v in out.items()}
            write_atomic(args.output, lambda fh: np.savez(fh, **arrays))
            print(f"outputs written to {args.output} (keys rank<r>/<output>)")
    _print_prof(config, topo.size)
    return 0


def _print_prof(config: Any, size: int) -> None:
    from geplug.config.parse import parse_source

    cfg = parse_source(config)[0]
    if cfg.profiling_mode:
        print(f"profiling:        one PROF_* directory per rank ({size}) under the "
              "profiling output directory (per server: <output>/<server_id>/ when the job "
              "has several servers)")
