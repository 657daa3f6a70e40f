"""``geplug check``, ``geplug resolve`` and ``geplug export``: session options from the shell.

Exit codes: 0 no error, 1 errors found, 2 usage errors (argparse, unknown product).
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import Any

__all__ = ["add_parser"]

EXIT_OK, EXIT_FINDING, EXIT_USAGE = 0, 1, 2


def _inputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="?", metavar="CONFIG",
                        help="TOML file whose keys are option names (a .json file is read as a "
                             "GE option map)")
    parser.add_argument("--ge-options", metavar="FILE.json",
                        help="read a GE option map (JSON object of ge.* keys) instead")
    parser.add_argument("--ge-level", choices=("global", "session", "graph"),
                        help="the GE level the --ge-options map is passed at (options at "
                             "another level are errors)")
    parser.add_argument("--atc", metavar='"ARGS"',
                        help='read ATC arguments instead; write --atc="..." (ATC flags start '
                             'with "--", which argparse would take for an option of geplug), '
                             'and include --soc_version, which ATC requires (E10054), e.g. '
                             '--atc="--precision_mode=force_fp16 --soc_version=Ascend910B3"')
    parser.add_argument("--product", metavar="P", help="product name or SoC version string")


ATC_FORM = '--atc="ARGS"'
"""How ``--atc`` must be written: its value starts with ``--``, so ``--atc "--flag=v"`` with a
single flag is rejected by argparse (``expected one argument``)."""


class _HelpFormatter(argparse.HelpFormatter):
    """Help text wrapped at spaces only (so ``--atc="--flag=value"`` stays in one piece), and
    ``--atc`` shown in the ``--atc="ARGS"`` form that always works."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False,
                             break_long_words=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("example"):  # example lines are kept as written
            return "".join(indent + line for line in text.splitlines(True))
        return super()._fill_text(text, width, indent)

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if action.dest == "atc":
            return ATC_FORM
        return super()._format_action_invocation(action)

    def _format_usage(self, usage: Any, actions: Any, groups: Any, prefix: Any) -> str:
        text = super()._format_usage(usage, actions, groups, prefix)
        return text.replace('--atc "ARGS"', ATC_FORM)


def add_parser(subparsers: Any) -> None:
    """Add ``check``, ``resolve`` and ``export`` to the ``geplug`` sub-commands."""
    p = subparsers.add_parser("check", help="check a session configuration against products",
                              description="Report every problem of a configuration at once.",
                              formatter_class=_HelpFormatter)
    _inputs(p)
    p.add_argument("--all-products", action="store_true",
                   help="check against every installed product (a matrix)")
    p.add_argument("--for-initialize-system", action="store_true",
                   help="also require initialize_system support")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=_check_cmd)

    p = subparsers.add_parser("resolve", help="show the effective values and their sources",
                              description="Show the value every option takes on the product "
                                          "and where it comes from: user, product default, "
                                          "run-mode default, front-end default, environment "
                                          "or built-in default.",
                              formatter_class=_HelpFormatter)
    _inputs(p)
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=_resolve_cmd)

    p = subparsers.add_parser(
        "export", help="export to GE / TF / ATC / torch_npu / acl.json form",
        formatter_class=_HelpFormatter,
        description="Write a checked configuration in the form a real stack takes: a GE option "
                    "map (ge), a TF1 session-config script with the initialize_system session "
                    "(tf), a runnable ATC command with MODEL/OUTPUT placeholders (atc), "
                    "torch_npu set_option (torch_npu) or an acl.json dump block (acl_json). An "
                    "option the target cannot take is left out and reported once. Example: "
                    "geplug export job.toml --product atlas_a2 --to tf --out session.py")
    _inputs(p)
    p.add_argument("--to", required=True,
                   choices=("ge", "tf", "atc", "torch_npu", "torch", "acl_json"),
                   help="the target form; torch is an alias of torch_npu (the front_end name)")
    p.add_argument("--out", metavar="FILE",
                   help="write the export to FILE (complete or not at all) instead of stdout; "
                        "left-out options are then listed on stderr")
    p.set_defaults(func=_export_cmd)


def _usage(message: str) -> int:
    print(f"geplug: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _read(args: argparse.Namespace) -> tuple[Any, list[Any]] | None:
    from geplug.config import parse

    given = [x for x in (args.config, args.ge_options, args.atc) if x]
    if len(given) != 1:
        return None
    if args.ge_options:
        return parse.parse_ge_file(args.ge_options, level=args.ge_level)
    if args.atc:
        return parse.parse_atc_args(args.atc)
    return parse.parse_source(args.config)


def _products(args: argparse.Namespace, config: Any, *, allow_all: bool) -> list[Any] | None:
    from geplug.plugin import get_manager

    registry = get_manager().products(strict=False)
    if allow_all and getattr(args, "all_products", False):
        return list(registry) or None
    name = args.product or config.soc_version
    if not name:
        return None
    return [registry.get(name)]


def _print_problems(problems: list[Any], stream: Any) -> None:
    for p in problems:
        print(f"  {p.severity}: {p.render()}", file=stream)


def _soc(args: argparse.Namespace, product: Any) -> str | None:
    """The SoC string ``--product`` named the product by (``Ascend910B3``), else None."""
    name = getattr(args, "product", None)
    return name if name in product.soc_versions else None


def _problems(args: argparse.Namespace, config: Any, product: Any,
              parse_problems: list[Any]) -> list[Any]:
    """Parsing problems and rule problems together, each finding once."""
    from geplug.config import check
    from geplug.config.problems import unique

    return unique([*parse_problems, *check(
        config, product, for_initialize_system=getattr(args, "for_initialize_system", False),
        soc=_soc(args, product))])


def _read_or_usage(args: argparse.Namespace, *, allow_all: bool
                   ) -> tuple[Any, list[Any], list[Any]] | int:
    """(config, parsing problems, products) or the usage exit code after saying why."""
    read = _read(args)
    if read is None:
        return _usage(f"give exactly one of CONFIG, --ge-options FILE or {ATC_FORM}")
    config, parse_problems = read
    products = _products(args, config, allow_all=allow_all)
    if products is None:
        from geplug.plugin import get_manager

        names = get_manager().products(strict=False).names()
        listing = f"installed: {', '.join(names)}" if names else "no product is installed"
        return _usage(f"name a product with --product P ({listing})" +
                      ("; or use --all-products" if allow_all else ""))
    return config, parse_problems, products


def _check_cmd(args: argparse.Namespace) -> int:
    got = _read_or_usage(args, allow_all=True)
    if isinstance(got, int):
        return got
    config, parse_problems, products = got
    results = []
    for product in products:
        problems = _problems(args, config, product, parse_problems)
        errors = sum(p.severity == "error" for p in problems)
        results.append((product, problems, errors))
    failed = any(errors for _, _, errors in results)
    if args.format == "json":
        objects = [{
            "product": product.name,
            "ok": errors == 0,
            "errors": errors,
            "warnings": len(problems) - errors,
            "problems": [p.to_json() for p in problems],
        } for product, problems, errors in results]
        if len(objects) == 1 and not args.all_products:
            print(json.dumps(objects[0], indent=2))
        else:
            print(json.dumps({"products": objects,
                              "accepted": [o["product"] for o in objects if o["ok"]]}, indent=2))
    else:
        for product, problems, errors in results:
            warnings = len(problems) - errors
            verdict = "accepted" if errors == 0 else "rejected"
            print(f"{product.name}: {verdict} ({errors} error(s), {warnings} warning(s))")
            _print_problems(problems, sys.stdout)
    return EXIT_FINDING if failed else EXIT_OK


def _resolved(args: argparse.Namespace) -> tuple[Any, Any, Any, list[Any]] | int:
    """(config, product, resolved, warnings), or the exit code after printing the errors."""
    from geplug.config import resolve

    got = _read_or_usage(args, allow_all=False)
    if isinstance(got, int):
        return got
    config, parse_problems, products = got
    product = products[0]
    problems = _problems(args, config, product, parse_problems)
    if any(p.severity == "error" for p in problems):
        print(f"geplug: the configuration has errors on {product.name}:", file=sys.stderr)
        _print_problems(problems, sys.stderr)
        return EXIT_FINDING
    return config, product, resolve(config, product, soc=_soc(args, product)), problems


PROFILING_DEFAULTS = {
    "task_trace": "on", "task_time": "on", "training_trace": "off", "ge_api": "off",
    "hccl": "off", "aicpu": "off", "l2": "off", "msproftx": "off", "runtime_api": "off",
}
"""What an unset profiling_options switch means (the seed: task_trace/task_time "on：开启，默认值",
ge_api "默认为off", hccl/aicpu/l2/msproftx "默认为off"/"默认值为off"; training_trace absent
is not collected)."""


def _fill_profiling_defaults(data: dict[str, Any], product: Any) -> list[str]:
    """Unset profiling switches in ``data["config"]["profiling_options"]`` -> their default
    (and aic_metrics -> the product's); the keys filled, in order."""
    opts = data.get("config", {}).get("profiling_options")
    if not isinstance(opts, dict):
        return []
    defaults = {**PROFILING_DEFAULTS, "aic_metrics": product.profiling.aic_metrics_default}
    filled = [k for k, v in defaults.items() if k in opts and opts[k] is None]
    for key in filled:
        opts[key] = defaults[key]
    return filled


def _resolve_cmd(args: argparse.Namespace) -> int:
    got = _resolved(args)
    if isinstance(got, int):
        return got
    _, product, resolved, warnings = got
    _print_problems(warnings, sys.stderr)
    data = resolved.to_json()
    filled = _fill_profiling_defaults(data, product)
    if filled:
        data["profiling_defaults"] = filled
    if args.format == "json":
        print(json.dumps(data, indent=2, default=str))
        return EXIT_OK
    print(f"product: {resolved.product}  run mode: {resolved.run_mode}")
    for name, value in data["config"].items():
        if value is None or name == "front_end":
            continue
        source = resolved.source(name)
        if isinstance(value, dict):
            value = json.dumps({k: v for k, v in value.items() if v is not None})
            if name == "profiling_options" and filled:
                source = f"{source}; defaults for {', '.join(filled)}"
        print(f"  {name} = {value!r}" + (f"  ({source})" if source else ""))
    for name in ("device_id", "dump_root", "profiling_output", "kernel_meta_dir",
                 "exception_dump_level", "exception_dump_path", "exception_dump_dir",
                 "op_debug_items",
                 "impl_default", "impl_by_op_type", "impl_by_node", "mixlist_overrides"):
        value = data[name]
        if value in (None, (), [], {}):
            continue
        source = resolved.source(name)
        print(f"  {name} = {value!r}" + (f"  ({source})" if source else ""))
    return EXIT_OK


def _export_cmd(args: argparse.Namespace) -> int:
    from geplug.config.export import export_report
    from geplug.config.problems import unique

    got = _resolved(args)
    if isinstance(got, int):
        return got
    config, product, _, warnings = got
    report = export_report(config, product, args.to, soc=_soc(args, product))
    commented = args.to in ("tf", "atc", "torch", "torch_npu")  # JSON forms have no comments
    left_out = {p.option for p in report.problems
                if commented and p.message.startswith("not exported")}
    if args.out:  # the file carries the comments; stderr lists each left-out option once
        from geplug.atomic import write_atomic

        data = report.text.encode("utf-8")
        try:
            write_atomic(args.out, lambda fh: fh.write(data))
        except OSError as exc:
            print(f"geplug: error: cannot write --out {args.out!r}: {exc.strerror or exc}",
                  file=sys.stderr)
            return EXIT_FINDING
        _print_problems(unique([*warnings, *report.problems]), sys.stderr)
        print(f"geplug: wrote {args.out}", file=sys.stderr)
        return EXIT_OK
    # on stdout the text's "#" comments say what was left out and why; stderr names them once
    _print_problems(unique([*warnings, *(p for p in report.problems
                                         if p.option not in left_out)]), sys.stderr)
    if left_out:
        from geplug.config.export import TARGET_NAMES, _target

        names = [p.option for p in report.problems if p.option in left_out]
        print(f"geplug: not exported to {TARGET_NAMES[_target(args.to)]}: "
              f"{', '.join(dict.fromkeys(names))} (the # comments say why and where instead)",
              file=sys.stderr)
    sys.stdout.write(report.text)
    return EXIT_OK
