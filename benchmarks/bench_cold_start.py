"""Cold start of ``geplug products`` as a ratio to ``python -c "import numpy"`` (target <= 2.5x).

Run: ``python benchmarks/bench_cold_start.py [--runs N]``. Both commands run as fresh
subprocesses, interleaved, several times; the medians are compared. Exits 0 always (the ratio
is information, not a test); prints a hint to ``python -X importtime`` when over target.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time

__all__ = ["main"]

TARGET = 2.5


def _time(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """Measure, print the medians and the ratio; return 0."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args(argv)
    script = shutil.which("geplug")
    geplug_cmd = [script, "products"] if script else [
        sys.executable, "-c", "import sys; from geplug.cli.main import main; "
        "sys.exit(main(['products']))"]
    numpy_cmd = [sys.executable, "-c", "import numpy"]
    _time(numpy_cmd), _time(geplug_cmd)  # warm the OS file cache
    numpy_times, geplug_times = [], []
    for _ in range(args.runs):
        numpy_times.append(_time(numpy_cmd))
        geplug_times.append(_time(geplug_cmd))
    base, ours = statistics.median(numpy_times), statistics.median(geplug_times)
    ratio = ours / base
    print(f"python -c 'import numpy'  median {base * 1000:7.1f} ms  ({args.runs} runs)")
    print(f"geplug products           median {ours * 1000:7.1f} ms  ({args.runs} runs)")
    verdict = "ok" if ratio <= TARGET else "OVER TARGET"
    print(f"ratio {ratio:.2f}x (target <= {TARGET}x): {verdict}")
    if ratio > TARGET:
        print("find the slow import: python -X importtime -m geplug.cli.main products "
              "2>&1 | sort -t'|' -k2 -n | tail")
    return 0


if __name__ == "__main__":
    sys.exit(main())
