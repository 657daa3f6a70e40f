"""The array on-chip reuse pass (geplug.device.cost.l2_resident_bytes) gives exactly what
the task-by-task pass it replaced gave, kept here as the reference (issue 10, compile
speed; docs/device-model.md, "On-chip reuse")."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence

import pytest

from geplug.device.cost import l2_resident_bytes

Tasks = Sequence[tuple[Sequence[str], Sequence[str]]]


def reference_l2(tasks: Tasks, sizes: Mapping[str, float], *, capacity_bytes: float,
                 eligible: set[str], fixed: set[str],
                 slices: Mapping[str, int] | Callable[[str, int], int] | None,
                 moved: Sequence[float] | None) -> list[float]:
    """The window rule one task at a time, with running prefix sums."""
    n = len(tasks)
    out = [0.0] * n
    if capacity_bytes <= 0 or not eligible or n == 0:
        return out
    prefix = [0.0] * (n + 1)
    fixed_prefix = [0.0] * (n + 1)
    written: dict[str, int] = {}
    touched: dict[str, list[int]] = {}
    total = pinned_total = 0.0
    for i, (reads, writes) in enumerate(tasks):
        here = pinned = 0.0
        for t in reads:
            here += sizes.get(t, 0.0)
            if t in eligible:
                touched.setdefault(t, []).append(i)
            elif t in fixed:
                pinned += sizes.get(t, 0.0)
        for t in writes:
            here += sizes.get(t, 0.0)
            if t in eligible and t not in written:
                written[t] = i
        if moved is not None and moved[i] < here:
            pinned = max(pinned - (here - moved[i]), 0.0)
            here = moved[i]
        total += here
        pinned_total += pinned
        prefix[i + 1] = total
        fixed_prefix[i + 1] = pinned_total
    part = (slices.get if isinstance(slices, Mapping) else slices) if slices else None
    for t, i in written.items():
        readers = touched.get(t)
        if not readers or readers[-1] <= i:
            continue
        j = readers[-1]
        size = sizes.get(t, 0.0)
        pinned = fixed_prefix[j + 1] - fixed_prefix[i]
        active = prefix[j + 1] - prefix[i] - pinned - size * len(readers)
        if pinned + active > capacity_bytes:
            parts = max(int(part(t, 1) or 1), 1) if part else 1
            if parts == 1 or pinned + active / parts > capacity_bytes:
                continue
        out[i] += size
        for r in readers:
            out[r] += size
    return out


def _random_case(seed: int) -> tuple[Tasks, dict[str, object]]:
    """Tasks reading and writing tensors drawn at random (repeats, reads before the first
    write, rewrites, empty names), fractional or integer sizes, every option used."""
    rng = random.Random(seed)
    names = [f"t{k}" for k in range(rng.randint(1, 30))] + [""]
    tasks = [(tuple(rng.choices(names, k=rng.randint(0, 4))),
              tuple(rng.choices(names, k=rng.randint(0, 3))))
             for _ in range(rng.randint(0, 40))]
    slices: Mapping[str, int] | Callable[[str, int], int] | None = (
        {t: rng.randint(0, 8) for t in names} if seed % 3 == 0
        else (lambda t, _: len(t) % 3 + 1) if seed % 3 == 1 else None)
    options: dict[str, object] = {
        "sizes": {t: rng.random() * 100 if seed % 2 else float(rng.randint(0, 100))
                  for t in names if t and rng.random() < 0.95},
        "capacity_bytes": rng.random() * 400,
        "eligible": {t for t in names if rng.random() < 0.6},
        "fixed": {t for t in names if rng.random() < 0.3},
        "slices": slices,
        "moved": [rng.random() * 200 for _ in tasks] if rng.random() < 0.5 else None,
    }
    return tasks, options


@pytest.mark.parametrize("block", range(4))
def test_array_l2_pass_equals_the_task_by_task_reference_on_random_graphs(block: int) -> None:
    served_somewhere = 0
    for seed in range(block * 250, (block + 1) * 250):
        tasks, options = _random_case(seed)
        expected = reference_l2(tasks, **options)  # type: ignore[arg-type]
        assert l2_resident_bytes(tasks, **options) == expected, seed  # type: ignore[arg-type]
        served_somewhere += any(expected)
    assert served_somewhere > 50  # the cases exercise the rule, not only its early exits


def test_array_l2_pass_equals_the_reference_on_a_long_chain_with_weights() -> None:
    # a 2,000-task chain, every task reading the previous activation and a weight, some
    # activations read again several tasks later (residual connections)
    rng = random.Random(7)
    tasks: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    sizes: dict[str, float] = {"x": 4096.0}
    for i in range(2000):
        prev = f"a{i - 1}" if i else "x"
        skip = (f"a{i - 5}",) if i >= 5 and i % 7 == 0 else ()
        sizes[f"a{i}"] = float(rng.choice([1024, 4096, 65536]))
        sizes[f"w{i}"] = float(rng.choice([0, 512, 8192]))
        tasks.append(((prev, f"w{i}", *skip), (f"a{i}",)))
    eligible = {f"a{i}" for i in range(1999)}
    fixed = {f"w{i}" for i in range(2000)}
    for capacity in (5e3, 2e5, 1e9):
        options = {"sizes": sizes, "capacity_bytes": capacity, "eligible": eligible,
                   "fixed": fixed, "slices": {t: 8 for t in eligible}, "moved": None}
        expected = reference_l2(tasks, **options)  # type: ignore[arg-type]
        assert any(expected)
        assert l2_resident_bytes(tasks, **options) == expected  # type: ignore[arg-type]
