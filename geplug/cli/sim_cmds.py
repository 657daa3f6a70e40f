"""``geplug compile`` and ``geplug run``: a backend from the shell.

Only the backend contract (:mod:`geplug.backend`) is used, so any backend serves them;
``geplug demo`` is a backend's own sub-command (``geplug_subcommands``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["add_parser", "open_system"]

EXIT_USAGE = 2
"""Exit status of a usage error (geplug.cli.main)."""


def open_system(product: str | None, config: Any, env: Mapping[str, str] | None = None) -> Any:
    """:func:`geplug.open_device` for ``product`` with ``config`` (path, mapping or None).

    ``geplug compile`` / ``run`` (and a backend's ``demo``) stand for ATC and the ACL runtime,
    which every product has, so a product without the TF1 ``initialize_system`` API (the
    inference series) is opened too, with every other rule of the configuration applied.
    """
    from geplug.runtime.api import open_device

    return open_device(product=product, config=config, env=env)


def _open_or_usage(args: argparse.Namespace) -> Any:
    """:func:`open_system` for ``compile`` / ``run``, or ``None`` after printing the usage
    error (exit 2) when no product is named (no ``--product``, no ``soc_version`` in the
    config) and several are installed, as ``geplug check`` does."""
    from geplug.errors import ProductNotNamedError

    try:
        return open_system(args.product, _config_arg(args.config))
    except ProductNotNamedError as exc:
        listing = ", ".join(exc.installed) or "none"
        print(f"geplug: error: name a product with --product P (installed: {listing})",
              file=sys.stderr)
        return None


def _config_arg(path: str | None) -> Any:
    if path is None:
        return None
    if not os.path.isfile(path):
        from geplug.errors import GeplugError

        raise GeplugError(f"--config {path!r}: no such file; give a TOML session configuration")
    return path


def _decision_rows(compiled: Any) -> list[list[str]]:
    return [[d.node, d.onnx_op, d.op_type, d.engine, _task_type(compiled, d.node),
             d.dtype or "-", _impl_cell(d), d.reason] for d in compiled.decisions]


def _impl_cell(decision: Any) -> str:
    """The implementation mode and why, compactly: ``high_precision (op type listed)``; the
    whole sentence is ``impl_reason`` in ``--format json``."""
    if not decision.impl_mode:
        return "-"
    basis = getattr(decision, "impl_basis", "")
    return f"{decision.impl_mode} ({basis})" if basis else decision.impl_mode


def _task_type(compiled: Any, node: str) -> str:
    """msprof's Task Type of the task running ``node`` (:data:`geplug.vocab.TASK_TYPES`;
    what ``geplug profile summary`` shows), "-" without a device model."""
    device = getattr(compiled, "device", None)
    if device is None:
        return "-"
    name = device.node_task.get(node)
    plan = next((p for p in device.tasks if p.name == name), None)
    return plan.cost.task_type if plan is not None else "-"


def _print_table(rows: list[list[str]], header: list[str]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        cells = [str(c).ljust(w) for c, w in zip(row[:-1], widths, strict=True)]
        print("  ".join([*cells, str(row[-1])]))


def _cmd_compile(args: argparse.Namespace) -> int:
    opened = _open_or_usage(args)
    if opened is None:
        return EXIT_USAGE
    with opened as system:
        compiled = system.compile(args.model)
        if args.format == "json":
            data = {
                "model": compiled.name,
                "product": system.product.name,
                "ops": [d.to_json() | _task_of(compiled, d.node)
                        for d in compiled.decisions],
                "simulated_time_us": compiled.simulated_time_us,
                "kernel_meta_files": list(compiled.kernel_meta_files),
            }
            device = getattr(compiled, "device", None)
            if device is not None:  # the core device model (docs/device-model.md)
                data["graph"] = device.graph.summary() | {
                    "transdata_tasks": len(device.conversions)}
                data["buffer_optimize"] = device.buffer_optimize
                data["small_channel"] = device.small_channel
                data["format_conversions"] = [
                    {"name": c.name, "tensor": c.tensor, "from": c.source, "to": c.target,
                     "before": c.consumer, "readers": list(c.readers),
                     "bytes_moved": c.bytes_moved}
                    for c in device.conversions]
                data["memory"] = device.memory.to_json()
                data["tasks"] = [_task_json(p, device) for p in device.tasks]
                data["notes"] = list(getattr(compiled, "notes", ()))
            json.dump(data, sys.stdout, indent=2)
            print()
        else:
            print(f"{compiled.name} on {system.product.display_name} ({system.product.name}): "
                  f"{len(compiled.decisions)} ops, simulated device time "
                  f"{compiled.simulated_time_us:.1f} us per step")
            _print_table(_decision_rows(compiled), ["node", "onnx", "op_type", "engine",
                                                    "task_type", "dtype", "impl_mode (why)",
                                                    "reason"])
            if compiled.kernel_meta_files:
                print(f"kernel_meta: {len(compiled.kernel_meta_files)} files in "
                      f"{os.path.dirname(compiled.kernel_meta_files[0])}")
            device = getattr(compiled, "device", None)
            if device is not None:
                _print_device(device, getattr(compiled, "notes", ()))
    return 0


def _task_of(compiled: Any, node: str) -> dict[str, Any]:
    """The task a decision's node runs in and that task's simulated time."""
    device = getattr(compiled, "device", None)
    task = device.node_task.get(node, node) if device is not None else node
    return {"task": task, "task_type": _task_type(compiled, node),
            "sim_time_us": compiled.op_times.get(task, 0.0)}


def _task_json(plan: Any, device: Any) -> dict[str, Any]:
    """One task of the device model (``geplug compile --format json``: ``tasks``);
    ``formats``: its tensors held in a device format (``NC1HWC0``, ``FRACTAL_Z``), the
    others being plain."""
    return {
        "name": plan.name, "op_type": plan.task.op_type, "members": list(plan.task.members),
        "pattern": plan.task.pattern, "engine": plan.engine, "dtype": plan.dtype,
        "stream_id": plan.stream_id, "start_ns": plan.start_ns,
        "duration_ns": plan.duration_ns, "flops": plan.cost.flops,
        "bytes_moved": plan.cost.bytes_moved, "l2_bytes": plan.cost.l2_bytes,
        "block_dim": plan.cost.block_dim,
        "formats": {t: layout.format for t, layout in device.formats.get(plan.name, {}).items()},
    }


def _mib(n: int | None) -> str:
    return "unknown" if n is None else f"{n / 2**20:.1f} MiB"


def _print_device(device: Any, notes: Any) -> None:
    """The graph passes and the memory plan, after the decision table."""
    g = device.graph
    inserted = f" + {len(device.conversions)} TransData" if device.conversions else ""
    print(f"graph: {len(g.graph.nodes)} nodes -> {len(g.tasks)} tasks{inserted} "
          f"({len(g.folded)} folded, {len(g.views)} views, {len(g.eliminated)} dead, "
          f"{len(g.fusions)} fused)")
    for f in g.fusions:
        print(f"  fused {f.name} ({f.op_type}, {f.pattern}): {' + '.join(f.members)}")
    served = sum(p.cost.l2_bytes for p in device.tasks)
    print(f"on-chip reuse: buffer_optimize={device.buffer_optimize}, "
          f"{_mib(int(served))} served by L2")
    convs = sum(1 for p in device.tasks for w in p.works for gm in w.gemms if gm.window)
    if convs:
        print(f"convolutions: {convs} on the cube, small_channel="
              f"{'on' if device.small_channel else 'off'} (C04 for inputs of at most 4 "
              "channels when on)")
    if device.conversions:
        moved = sum(c.bytes_moved for c in device.conversions)
        names = {c.name for c in device.conversions}
        us = sum(p.duration_ns for p in device.tasks if p.name in names) / 1000.0
        print(f"format conversions: {len(device.conversions)} TransData tasks "
              f"({_mib(moved)} moved, {us:.1f} us), each before the first task reading the "
              "converted tensor")
    m = device.memory
    print(f"memory: weights {_mib(m.weights_bytes)}, activation peak "
          f"{_mib(m.activation_peak_bytes)}, workspace {_mib(m.workspace_bytes)}, total "
          f"{_mib(m.total_bytes)} of {_mib(m.capacity_bytes)} ({m.soc_version}"
          + (f": usable of its {_mib(m.hbm_bytes)} HBM"
             if m.hbm_bytes is not None and m.hbm_bytes != m.capacity_bytes else "") + ")")
    for note in notes:
        print(f"note: {note}")


def _parse_inputs(specs: list[str]) -> dict[str, Any]:
    from geplug.errors import GeplugError, UsageError
    from geplug.limits import escape_controls
    from geplug.npy import read_npy

    feeds: dict[str, Any] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        shown = repr(escape_controls(spec))
        if not sep or not name or not path:
            raise UsageError(f"--input {shown}: expected NAME=FILE.npy", argument="--input")

        def fail(message: str, shown: str = shown) -> GeplugError:
            return GeplugError(f"--input {shown}: {message}")

        feeds[name] = read_npy(path, fail=fail)
    return feeds


def _check_output(path: str | None) -> None:
    from geplug.errors import GeplugError

    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise GeplugError(f"--output {path!r}: directory {folder!r} does not exist; create it "
                          "or give another path")
    if os.path.isdir(path):
        raise GeplugError(f"--output {path!r} is a directory; give a file name such as "
                          "outputs.npz")


def _save_npz(path: str, arrays: Mapping[str, Any]) -> None:
    """Write ``arrays`` to ``path`` completely or not at all (temp file + os.replace)."""
    import numpy as np

    from geplug.atomic import write_atomic
    from geplug.errors import GeplugError

    try:
        write_atomic(path, lambda fh: np.savez(fh, **dict(arrays)))
    except OSError as exc:
        raise GeplugError(f"--output {path!r}: cannot write it ({exc.strerror})") from None


def _cmd_run(args: argparse.Namespace) -> int:
    import numpy as np

    from geplug.errors import UsageError

    if args.steps < 1:
        raise UsageError(f"--steps {args.steps!r}: give a number of steps >= 1",
                         argument="--steps")
    if args.ranks is not None or args.rank_table is not None or args.analytic:
        return _run_cluster(args)
    _check_output(args.output)
    feeds = _parse_inputs(args.input or [])
    opened = _open_or_usage(args)
    if opened is None:
        return EXIT_USAGE
    from geplug.cli.progress import directory_bytes, progress

    with progress(args.steps, f"running {os.path.basename(args.model)}",
                  quiet=args.quiet) as bar:
        with opened as system:
            prof_before = _prof_dirs(system)
            compiled = system.compile(args.model)
            if not feeds:
                from geplug.backend import random_inputs

                feeds = random_inputs(compiled.inputs)
                print("no --input given: using seeded random inputs "
                      + ", ".join(f"{k}{list(v.shape)}" for k, v in feeds.items()))
            outputs: Mapping[str, Any] = {}
            dump_root = getattr(system.config, "dump_root", None)
            for step in range(args.steps):
                outputs = compiled.run(feeds, step=step)
                bar.advance(directory_bytes(dump_root) if bar.enabled and dump_root else None)
            print(f"{compiled.name} on {system.product.name}: {args.steps} step(s), simulated "
                  f"device time {compiled.simulated_time_us:.1f} us per step (device only; "
                  "`geplug profile summary` also shows host time)")
            for name, arr in outputs.items():
                finite = bool(np.all(np.isfinite(arr))) if arr.dtype.kind == "f" else True
                print(f"  {name}: {arr.dtype} {list(arr.shape)}"
                      + ("" if finite else "  (contains inf/nan)"))
            _print_findings(outputs)
            if args.output:
                _save_npz(args.output, outputs)
                print(f"outputs written to {args.output}")
            bar.phase("writing dumps and profiling summaries")
            written = _run_locations(system, compiled, prof_before)
    for label, where in written.items():  # after shutdown: every file is complete
        print(f"{label + ':':<18}{where}")
    return 0


def _run_cluster(args: argparse.Namespace) -> int:
    """``run --ranks/--rank-table/--analytic``: the backend's ``cluster`` sub-command runs it
    (the simulator offers one through ``geplug_subcommands``; the core imports no backend)."""
    import warnings

    from geplug.errors import GeplugError
    from geplug.plugin import get_manager

    with warnings.catch_warnings():  # already shown once when the parser was built
        warnings.simplefilter("ignore")
        commands = {c.name: c for c in get_manager().subcommands()}
    if "cluster" not in commands:
        raise GeplugError("multi-rank runs (--ranks, --rank-table, --analytic) need a backend "
                          "offering `geplug cluster`: pip install geplug-simulator (from a "
                          "checkout: pip install -e plugins/simulator)")
    return int(commands["cluster"].action(args))


def _print_findings(outputs: Any) -> None:
    """Say when outputs are non-finite and how to find the op where it starts."""
    from geplug.runtime.result import FIND_THE_OP

    nonfinite = list(getattr(outputs, "nonfinite_outputs", ()))
    if not nonfinite:
        return
    named = [o for o in getattr(outputs, "overflows", ()) if o.op_name]
    if named:
        print(f"non-finite outputs {', '.join(nonfinite)}: the overflow starts at " + ", ".join(
            dict.fromkeys(f"{o.op_name} ({o.op_type})" for o in named)))
    else:
        print(f"non-finite outputs {', '.join(nonfinite)}: {FIND_THE_OP} (in --config)")


def _prof_dirs(system: Any) -> set[str]:
    """The ``PROF_*`` directories in the system's profiling output directory now."""
    root = system.config.profiling_output
    if not system.profiling_enabled or not root or not os.path.isdir(root):
        return set()
    return {os.path.join(root, n) for n in os.listdir(root) if n.startswith("PROF_")}


def _run_locations(system: Any, compiled: Any, prof_before: set[str]) -> dict[str, str]:
    """What this run produced and where: dumps, profiling output, kernel_meta (only those
    produced)."""
    found: dict[str, str] = {}
    try:
        from geplug.dump.plugin import dump_locations
    except ImportError:  # pragma: no cover - geplug without its dump package
        pass
    else:
        found.update(dump_locations(system))
    for path in sorted(_prof_dirs(system) - prof_before):
        found["profiling"] = path
    if compiled.kernel_meta_files:
        count = len(compiled.kernel_meta_files)
        found["kernel_meta"] = (f"{os.path.dirname(compiled.kernel_meta_files[0])} "
                                f"({count} file{'s' if count != 1 else ''})")
    return found


def _model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="path of an .onnx file")
    p.add_argument("--product", default=None, help="product name or SoC version "
                   "(default: the config's soc_version, else the only installed product; "
                   "required when several are installed and the config names none)")
    p.add_argument("--config", default=None, help="session configuration (TOML; default: "
                   "none, every option at its default)")


def add_parser(subparsers: Any) -> None:
    """Add ``compile`` and ``run``."""
    p = subparsers.add_parser(
        "compile", help="show each operator's dtype, engine and implementation mode",
        description="Compile an ONNX model for a simulated product and print the per-op "
                    "decisions (dtype, AI Core/AI CPU, implementation mode, reason).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  geplug compile model.onnx --product atlas_a2\n"
               "  geplug compile model.onnx --config job.toml --format json",
    )
    _model_args(p)
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text for people, json for scripts (default: text)")
    p.set_defaults(func=_cmd_compile)

    p = subparsers.add_parser(
        "run", help="run an ONNX model on a simulated product",
        description="Compile and run an ONNX model; dumps, profiling and kernel_meta follow "
                    "the configuration, as on hardware. Prints the simulated device time per "
                    "step and says when outputs are inf/NaN and how to find the op.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  geplug run model.onnx --product atlas_a2\n"
               "  geplug run model.onnx --product atlas_a2 --config job.toml --steps 4 "
               "--input x=x.npy --output out.npz",
    )
    _model_args(p)
    p.add_argument("--input", action="append", metavar="NAME=FILE.npy",
                   help="an input array (repeat per input); default: seeded random inputs")
    p.add_argument("--steps", type=int, default=1,
                   help="steps (iterations) to run (default: 1)")
    p.add_argument("--output", default=None, metavar="FILE.npz", help="save the last outputs")
    p.add_argument("--ranks", type=int, default=None, metavar="N",
                   help="run N ranks as virtual devices in one process (docs/distributed.md); "
                        "--input paths may contain {rank}")
    p.add_argument("--rank-table", default=None, metavar="FILE.json",
                   help="run every rank of this rank table (RANK_TABLE_FILE format)")
    p.add_argument("--analytic", action="store_true",
                   help="with --ranks/--rank-table: derive every rank's timeline from one "
                        "compile, no numerics (1,024-10,000 ranks)")
    p.add_argument("--seed", type=int, default=0,
                   help="with --ranks: seed of the rank-dependent random inputs "
                        "(numpy default_rng([seed, rank]))")
    p.add_argument("--quiet", action="store_true",
                   help="no progress display (it is shown only on a terminal anyway)")
    p.set_defaults(func=_cmd_run)
