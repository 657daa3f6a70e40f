"""Print one closing line summing the pytest results of every tox env (CI log readers key on it).

Reads ``.tox/junit/*.xml`` written by the tox envs (``--junitxml``); prints
``tests: N passed, N failed, N skipped`` and one line per env, so a CI log shows what ran even
though ``tox run-parallel`` hides each env's own output when it passes.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

__all__ = ["main"]


def main(directory: str) -> int:
    """Sum the junit files under ``directory``; exit 1 when none exists (nothing ran)."""
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    files = sorted(Path(directory).glob("*.xml"))
    for path in files:
        root = ET.parse(path).getroot()
        suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
        tests = sum(int(s.get("tests", 0)) for s in suites)
        failed = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
        skipped = sum(int(s.get("skipped", 0)) for s in suites)
        passed = tests - failed - skipped
        print(f"  {path.stem}: {passed} passed, {failed} failed, {skipped} skipped")
        totals["passed"] += passed
        totals["failed"] += failed
        totals["skipped"] += skipped
    if not files:
        print(f"no test results under {directory}: no tox env ran pytest", file=sys.stderr)
        return 1
    print(f"tests: {totals['passed']} passed, {totals['failed']} failed, "
          f"{totals['skipped']} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ".tox/junit"))
