"""Hook dispatch cost: ``PluginManager.call_each`` per event, against rebuilding the list.

Run: ``python benchmarks/bench_plugin_dispatch.py [--events 200000]``. Prints the cost per
event of ``call_each`` (implementations and argument names cached per hook) and of the
uncached way measured in the same run (``get_hookimpls()`` and an argument dict per call, what
``call_each`` did before), with their ratio; exits 0. Target: cached <= 0.8x uncached.
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any


class _Consumer:
    """A user's trivial ``geplug_profile`` consumer (the cost measured is the dispatch)."""

    GEPLUG_PLUGIN_API = 1

    def __init__(self) -> None:
        self.seen = 0

    def geplug_profile(self, event: Any) -> None:
        self.seen += 1


def _uncached(manager: Any, hook_name: str, **kwargs: Any) -> list[Any]:
    """The pre-cache ``call_each`` loop, as the baseline."""
    results = []
    for impl in list(getattr(manager.pm.hook, hook_name).get_hookimpls()):
        try:
            results.append(impl.function(**{a: kwargs[a] for a in impl.argnames}))
        except Exception:
            raise
    return results


def _per_event_us(call: Any, events: int) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(events):
            call()
        best = min(best, time.perf_counter() - t0)
    return best / events * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=200_000)
    args = parser.parse_args()

    from geplug import hookimpl
    from geplug.plugin import PluginManager

    _Consumer.geplug_profile = hookimpl(_Consumer.geplug_profile)  # type: ignore[method-assign]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        manager = PluginManager().load(entry_points=False)
    for name in [n for n, _ in manager.pm.list_name_plugin() if n]:
        manager.pm.unregister(name=name)  # only the trivial consumers: measure dispatch alone
    for i in range(3):
        manager.register(_Consumer(), f"consumer{i}")
    event = object()
    cached = _per_event_us(lambda: manager.call_each("geplug_profile", event=event), args.events)
    uncached = _per_event_us(lambda: _uncached(manager, "geplug_profile", event=event),
                             args.events)
    print(f"dispatch of one geplug_profile event to 3 trivial plugins ({args.events} events):")
    print(f"  call_each (cached) {cached:.3f} us/event, uncached {uncached:.3f} us/event: "
          f"{cached / uncached:.2f}x (target <= 0.8x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
