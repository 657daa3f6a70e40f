"""``geplug demo`` as a sub-command the simulator adds to the core CLI (``geplug_subcommands``).

Light on purpose: the CLI builds its parser from this on every start, so onnx is imported
only when the demo runs.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from geplug.backend import Subcommand
from geplug_simulator import DEFAULT_PRODUCT

__all__ = ["demo_command"]


def demo_command() -> Subcommand:
    """``geplug demo``, offered to the core CLI through ``geplug_subcommands``."""
    return Subcommand(
        name="demo", summary="run two small example models and show what precision modes do",
        description="Build a small MLP and CNN, run them on a simulated product under "
                    "several precision modes, and print the decisions, numbers and times.",
        configure=_configure, action=_cmd_demo)


def _configure(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = ("examples:\n  geplug demo\n  geplug demo --product atlas_train --out demo/\n"
                "  geplug demo --quiet > demo.txt")
    p.add_argument("--product", default=None,
                   help=f"product name or SoC version (default: {DEFAULT_PRODUCT})")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="keep the models, outputs and decisions here (default: write nothing)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress display (it is shown only on a terminal anyway)")


def _cmd_demo(args: argparse.Namespace) -> int:
    import sys
    import tempfile

    from geplug.cli.progress import progress
    from geplug.runtime.api import open_device
    from geplug_simulator.demo import DEMO_CASES, run_demo

    def open_system(product: str, config: dict[str, Any]) -> Any:
        return open_device(product=product, config=config, backend="simulator")

    product = args.product or DEFAULT_PRODUCT
    with progress(DEMO_CASES, f"demo on {product}", quiet=args.quiet) as bar:
        def on_case(label: str) -> None:
            bar.advance()
            bar.phase(f"demo on {product}: {label}")

        if args.out:
            return run_demo(open_system, product=product, out_dir=os.path.abspath(args.out),
                            stream=sys.stdout, on_case=on_case)
        cwd = os.getcwd()
        with tempfile.TemporaryDirectory(prefix="geplug-demo-") as tmp:
            os.chdir(tmp)  # anything the configuration writes stays in the temp dir
            try:
                return run_demo(open_system, product=product, stream=sys.stdout,
                                on_case=on_case)
            finally:
                os.chdir(cwd)
