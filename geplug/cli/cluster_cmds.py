"""``geplug run MODEL --ranks N | --rank-table FILE [--analytic]``: a multi-rank job.

Every rank is a virtual device of the simulator in this process (docs/distributed.md); the
analytic mode derives every rank's timeline from one compile. onnx and the simulator are
imported inside the function only (CLI start-up stays fast).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["run_cluster"]


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
    import numpy as np

    from geplug.errors import GeplugError, UsageError

    feeds: dict[str, Any] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"--input {spec!r}: expected NAME=FILE.npy (the path may "
                             "contain {rank})", argument="--input")
        real = path.replace("{rank}", str(rank))
        try:
            feeds[name] = np.load(real, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise GeplugError(f"--input {spec!r}: cannot read {real!r} for rank {rank} as .npy "
                              f"({exc or type(exc).__name__}); give a file written by "
                              "numpy.save per rank ({rank} in the path)") from None
    return feeds


def run_cluster(args: argparse.Namespace, open_system: Callable[..., Any]) -> int:
    """Run the job the arguments describe; prints a summary per rank; returns 0."""
    from geplug.errors import GeplugError
    from geplug.plugin import get_manager

    try:
        from geplug_simulator.cluster import (
            ClusterJob,
            run_analytic,
            seeded_inputs,
            server_config,
        )
    except ImportError:
        raise GeplugError("multi-rank runs need the simulator: pip install geplug-simulator "
                          "(from a checkout: pip install -e plugins/simulator)") from None
    from geplug.config.parse import parse_source
    from geplug.hccl import read_faults, read_settings

    config = args.config
    if config is not None and not os.path.isfile(config):
        raise GeplugError(f"--config {config!r}: no such file; give a TOML session "
                          "configuration")
    name = args.product or parse_source(config)[0].soc_version
    if not name:
        installed = [p.name for p in get_manager().products()]
        if len(installed) != 1:
            print("geplug: error: name a product with --product P (installed: "
                  + ", ".join(installed) + ")", file=sys.stderr)
            return 2
        name = installed[0]
    product = get_manager().products().get(str(name))
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
