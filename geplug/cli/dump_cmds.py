"""``geplug dump``: list, show, convert and compare data dumps (ls / show / convert / compare).

Heavy imports (numpy, protobuf) happen inside the command functions so ``geplug --help``
stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from geplug.limits import escape_controls

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> None:
    """Add the ``dump`` command and its sub-commands to the ``geplug`` parser."""
    parser = subparsers.add_parser(
        "dump", help="list, show, convert and compare data / overflow / exception dumps",
        description="Read the dump files geplug (or the real CANN stack) writes.",
    )
    sub = parser.add_subparsers(dest="dump_command", metavar="SUBCOMMAND")
    parser.set_defaults(func=lambda args: _usage(parser))

    ls = sub.add_parser("ls", help="steps, ops, tensors and sizes of a dump tree")
    ls.add_argument("path", help="a dump_path, any directory below it, or one dump file")
    ls.add_argument("--format", choices=("text", "json"), default="text")
    ls.set_defaults(func=cmd_ls)

    show = sub.add_parser("show", help="header and per-tensor statistics of one dump file")
    show.add_argument("file")
    show.add_argument("--format", choices=("text", "json"), default="text")
    show.set_defaults(func=cmd_show)

    convert = sub.add_parser("convert", help="write every tensor as .npy files or one .npz "
                             "per dump file")
    convert.add_argument("path", help="a dump tree or one dump file")
    convert.add_argument("--to", choices=("npy", "npz"), default="npy")
    convert.add_argument("--out", required=True, help="output directory (created)")
    convert.set_defaults(func=cmd_convert)

    compare = sub.add_parser(
        "compare", help="compare two dump trees op by op; highlights the first op over the "
        "threshold")
    compare.add_argument("a", help="the run to check")
    compare.add_argument("b", help="the reference run")
    compare.add_argument("--threshold", type=_cosine, default=0.99,
                         help="minimum cosine similarity, in [-1, 1] (default 0.99)")
    compare.add_argument("--rel-threshold", type=_relative, default=None,
                         help="also fail a tensor whose max relative error exceeds this (>= 0)")
    compare.add_argument("--format", choices=("text", "json"), default="text")
    compare.set_defaults(func=cmd_compare)


def _cosine(text: str) -> float:
    """``--threshold``: a cosine similarity in [-1, 1] (else a usage error, exit 2)."""
    from geplug.dump.compare import check_thresholds

    try:
        value = float(text)
        check_thresholds(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a cosine similarity in [-1, 1] (e.g. 0.99)"
            if "outside" not in str(exc) else str(exc)) from None
    return value


def _relative(text: str) -> float:
    """``--rel-threshold``: a relative error >= 0 (else a usage error, exit 2)."""
    from geplug.dump.compare import check_thresholds

    try:
        value = float(text)
        check_thresholds(0.0, value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a relative error >= 0 (e.g. 0.01 for 1%)") from None
    return value


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover


def cmd_ls(args: argparse.Namespace) -> int:
    """``geplug dump ls PATH``: dump files by step directory (data and overflow), exception
    dumps (no step), and the ``statistic.csv`` files of ``dump_data = "stats"``."""
    from geplug.dump.reader import iter_dump_tree, iter_stats_files, read_header
    from geplug.dump.schema import OUTPUT_DATA_TYPES

    rows: list[dict[str, Any]] = []
    for entry in iter_dump_tree(args.path):
        header, _, size = read_header(entry.path)

        def desc(items: Any) -> list[str]:
            return [
                OUTPUT_DATA_TYPES.get(int(t.data_type), str(t.data_type)).removeprefix("DT_")
                + "[" + ",".join(str(d) for d in t.shape.dim) + "]"
                for t in items
            ]

        kind = ("exception" if entry.is_exception else
                "overflow" if entry.is_overflow else "data")
        rows.append({
            "dir": os.path.dirname(entry.path), "file": entry.name, "kind": kind,
            "step": entry.step, "model_name": entry.model_name, "device_id": entry.device_id,
            "op_name": header.op_name, "op_type": entry.parsed.op_type,
            "task_id": entry.parsed.task_id, "stream_id": entry.parsed.stream_id,
            "overflow": entry.is_overflow, "exception": entry.is_exception,
            "inputs": desc(header.input), "outputs": desc(header.output),
            "spaces": len(header.space), "size": size,
        })
    for stats in iter_stats_files(args.path):
        rows.append({
            "dir": os.path.dirname(stats.path), "file": os.path.basename(stats.path),
            "kind": "statistics", "step": stats.step, "model_name": stats.model_name,
            "device_id": stats.device_id, "ops": _stats_ops(stats.rows()),
            "size": os.path.getsize(stats.path),
        })
    if args.format == "json":
        print(json.dumps(rows, indent=2))
        return 0 if rows else 1
    if not rows:  # a finding: the path holds nothing to list (a wrong directory?)
        print(f"no dump files under {args.path}", file=sys.stderr)
        return 1
    for directory in dict.fromkeys(r["dir"] for r in rows):
        in_dir = [r for r in rows if r["dir"] == directory]
        print(f"{directory}  ({_dir_label(in_dir)}: {len(in_dir)} "
              f"{'file' if len(in_dir) == 1 else 'files'}, "
              f"{_human(sum(r['size'] for r in in_dir))})")
        for row in in_dir:
            if row["kind"] == "statistics":
                _print_stats_row(row)
            else:
                _print_dump_row(row)
    total = sum(r["size"] for r in rows)
    print(f"{len(rows)} {'file' if len(rows) == 1 else 'files'}, {_human(total)}")
    return 0


def _dir_label(rows: list[dict[str, Any]]) -> str:
    """What a directory holds: ``step N``, ``exception dumps`` (they have no step) or
    ``files``."""
    if all(r["kind"] == "exception" for r in rows):
        device = rows[0]["device_id"]
        return "exception dumps" + (f", device {device}" if device else "")
    step = rows[0]["step"]
    return f"step {step}" if step is not None else "files"


def _in_out(inputs: list[str], outputs: list[str]) -> str:
    """`` in a b out c`` for a listing line (empty sides left out)."""
    text = " in " + " ".join(inputs) if inputs else ""
    return text + (" out " + " ".join(outputs) if outputs else "")


def _print_dump_row(row: dict[str, Any]) -> None:
    kind = {"overflow": "OVERFLOW ", "exception": "EXCEPTION "}.get(row["kind"], "")
    tensors = _in_out(row["inputs"], row["outputs"])
    if row["spaces"]:
        tensors += f" space x{row['spaces']}"
    print(escape_controls(f"  task {row['task_id']:>5}  {kind}{row['op_type']:<14} "
                          f"{row['op_name']:<30}{tensors}  {_human(row['size'])}"))


def _stats_ops(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    """The rows of a statistic.csv grouped per op, in file order (JSON-ready)."""
    ops: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        key = (r.get("Task ID", ""), r.get("Op Name", ""))
        op = ops.setdefault(key, {
            "task_id": r.get("Task ID", ""), "op_type": r.get("Op Type", ""),
            "op_name": r.get("Op Name", ""), "inputs": [], "outputs": [], "nonfinite": 0,
        })
        shape = r.get("Shape", "").strip("()").replace(" ", "")
        side = "inputs" if r.get("Input/Output") == "Input" else "outputs"
        op[side].append(f"{r.get('Data Type', '')}[{shape}]")
        for column in ("Nan Count", "Negative Inf Count", "Positive Inf Count"):
            value = r.get(column, "0")
            op["nonfinite"] += int(value) if value.isdigit() else 0
    return list(ops.values())


def _print_stats_row(row: dict[str, Any]) -> None:
    print(f"  {row['file']}: statistics of {len(row['ops'])} ops")
    for op in row["ops"]:
        tensors = _in_out(op["inputs"], op["outputs"])
        if op["nonfinite"]:
            tensors += f"  inf/nan {op['nonfinite']}"
        print(escape_controls(f"  task {op['task_id']:>5}  {op['op_type']:<14} "
                              f"{op['op_name']:<30}{tensors}"))


def _tensor_info(t: Any) -> dict[str, Any]:
    from geplug.dump.stats import tensor_stats

    info: dict[str, Any] = {
        "tensor": t.label, "dtype": t.dtype, "format": t.format, "shape": list(t.shape),
        "size": t.size,
    }
    if t.kind in ("input", "output") and t.array is not None and t.array.size:
        info.update(tensor_stats(t.array))
    return info


def cmd_show(args: argparse.Namespace) -> int:
    """``geplug dump show FILE``."""
    from geplug.dump.reader import read_dump, read_mapping

    directory, base = os.path.split(os.path.abspath(args.file))
    dump = read_dump(args.file, name=read_mapping(directory).get(base, base))
    record = dump.overflow_record()
    tensors = [_tensor_info(t) for t in dump.tensors]
    if args.format == "json":
        data = {"file": dump.path, "name": dump.name, "header": dump.header_json(),
                "header_len": dump.header_len, "file_size": dump.file_size,
                "tensors": _finite_json(tensors)}
        if record is not None:
            data["overflow_record"] = {"layout": record.layout, "version": record.version,
                                       "acc_type": record.acc_type, **record.fields}
        print(json.dumps(data, indent=2))
        return 0
    print(f"file:        {dump.path}")
    if dump.name != os.path.basename(dump.path):
        print(f"name:        {dump.name} (from mapping.csv)")
    print(f"op_name:     {dump.op_name}")
    print(f"version:     {dump.header.version}")
    print(f"dump_time:   {dump.dump_time}")
    print(f"header:      {dump.header_len} bytes; file {dump.file_size} bytes")
    if dump.header.dfx_message:
        print("dfx_message:")
        for line in str(dump.header.dfx_message).splitlines():
            print(f"  {line}")
    if record is not None:
        print(f"overflow record ({record.layout} layout, version {record.version}, "
              f"acc_type {record.acc_type}):")
        for key, value in record.fields.items():
            print(f"  {key:<11} {value}")
    print(f"{'tensor':<10} {'dtype':<9} {'format':<10} {'shape':<18} {'size':>10} "
          f"{'min':>11} {'max':>11} {'mean':>11} {'nan':>6} {'inf':>6}")
    for info in tensors:
        shape = "[" + ",".join(str(d) for d in info["shape"]) + "]"
        stats = ""
        if "min" in info:
            stats = (f"{info['min']:>11.5g} {info['max']:>11.5g} {info['mean']:>11.5g} "
                     f"{info['nan']:>6} {info['pos_inf'] + info['neg_inf']:>6}")
        print(f"{info['tensor']:<10} {info['dtype']:<9} {info['format']:<10} {shape:<18} "
              f"{info['size']:>10} {stats}")
    return 0


def _finite_json(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    import math

    return [
        {k: (str(v) if isinstance(v, float) and not math.isfinite(v) else v)
         for k, v in item.items()}
        for item in items
    ]


def cmd_convert(args: argparse.Namespace) -> int:
    """``geplug dump convert PATH --to npy|npz --out DIR``; bfloat16 is written as float32
    (lossless; .npy has no bfloat16 type), like the reference reader does."""
    import numpy as np

    from geplug.dump.reader import iter_dump_tree

    root = args.path if os.path.isdir(args.path) else os.path.dirname(os.path.abspath(args.path))
    count = files = 0
    for entry in iter_dump_tree(args.path):
        dump = entry.read()
        rel = os.path.relpath(os.path.dirname(entry.path), root)
        out_dir = _out_dir(os.path.normpath(os.path.join(args.out, rel)))
        arrays: dict[str, Any] = {}
        for t in dump.tensors:
            if t.array is None:
                continue
            arr = t.array
            if arr.dtype.name in ("bfloat16", "float8_e5m2", "float8_e4m3fn"):
                arr = arr.astype(np.float32)
            arrays[f"{t.kind}_{t.index}"] = arr
        if args.to == "npz":
            target = os.path.join(out_dir, entry.name + ".npz")
            _save(target, lambda fh, a=arrays: np.savez(fh, **a))
            count += len(arrays)
        else:
            for key, arr in arrays.items():
                kind, index = key.split("_")
                target = os.path.join(out_dir, f"{entry.name}.{kind}.{index}.npy")
                _save(target, lambda fh, a=arr: np.save(fh, a))
                count += 1
        files += 1
    if not files:
        print(f"no dump files under {args.path}: nothing converted", file=sys.stderr)
        return 1
    print(f"converted {files} dump files into {count} arrays under {args.out}")
    return 0


def _out_dir(path: str) -> str:
    """Create the convert output directory ``path``; a DumpError names it on failure."""
    from geplug.errors import DumpError

    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise DumpError(f"cannot create output directory {path!r}: {exc.strerror or exc}; "
                        "choose a writable --out directory", path=path) from exc
    return path


def _save(target: str, write: Any) -> None:
    """Write one converted file completely or not at all (temporary name, then rename)."""
    from geplug.atomic import write_atomic
    from geplug.errors import DumpError

    try:
        write_atomic(target, write)
    except OSError as exc:
        raise DumpError(f"cannot write {target!r}: {exc.strerror or exc}; free some space or "
                        "choose a writable --out directory (files converted before are "
                        "complete)", path=target) from exc


def cmd_compare(args: argparse.Namespace) -> int:
    """``geplug dump compare A B``: exit 1 when an op is over the threshold, or when no op
    of A matches one of B (a mistyped directory must not pass a CI gate)."""
    from geplug.dump.compare import compare_trees

    report = compare_trees(args.a, args.b, threshold=args.threshold,
                           rel_threshold=args.rel_threshold)
    if args.format == "json":
        print(json.dumps(report.to_json(), indent=2))
        if report.no_match:
            print(f"geplug: error: {report.no_match}", file=sys.stderr)
    else:
        sys.stdout.write(report.render())
    return 0 if report.passed else 1
