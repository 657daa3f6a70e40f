"""Configurations checked per second against every installed product (target >= 2,000/s).

Run: ``python benchmarks/bench_check.py``. Prints the rate and its ratio to the target, plus
the rate of parsing alone (the baseline measured in the same run). Always exits 0.
"""

from __future__ import annotations

import random
import time
import warnings
from typing import Any

TARGET = 2000.0


def _configs(n: int) -> list[dict[str, Any]]:
    rng = random.Random(7)
    modes = ["allow_mix_precision", "force_fp32", "must_keep_origin_dtype", "force_fp16",
             "allow_fp32_to_bf16", "bogus"]
    out = []
    for i in range(n):
        out.append({
            "profiling_mode": bool(i % 2),
            "profiling_options": {"task_trace": rng.choice(["on", "off", "l3"]),
                                  "training_trace": "on",
                                  "aic_metrics": rng.choice(["PipeUtilization", "MemoryAccess",
                                                             "Custom:0x49,0x8,0x15"]),
                                  "storage_limit": rng.choice(["200MB", "100MB"]),
                                  "sys_hardware_mem_freq": str(rng.randint(1, 120))},
            "precision_mode": rng.choice(modes),
            "graph_run_mode": rng.choice([0, 1]),
            "dump_step": rng.choice(["0|5|10-20", "5-1", "1"]),
            "dump_mode": rng.choice(["all", "output", "x"]),
            "op_debug_level": rng.randint(0, 5),
            "enable_exception_dump": rng.randint(0, 2),
            "op_select_implmode": rng.choice(["high_precision", "high_performance_for_all"]),
        })
    return out


def main() -> int:
    from geplug.config import SessionConfig, check
    from geplug.plugin import PluginManager

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        products = list(PluginManager().load().products())
    raw = _configs(400)
    start = time.perf_counter()
    configs = [SessionConfig.from_mapping(r) for r in raw]
    parse_rate = len(raw) / (time.perf_counter() - start)
    env: dict[str, str] = {}
    rounds = 3
    start = time.perf_counter()
    problems = 0
    for _ in range(rounds):
        for config in configs:
            for product in products:
                problems += len(check(config, product, env=env))
    elapsed = time.perf_counter() - start
    rate = rounds * len(configs) / elapsed
    print(f"products: {len(products)} ({', '.join(p.name for p in products)})")
    print(f"parse only (baseline): {parse_rate:,.0f} configs/s")
    print(f"check against all products: {rate:,.0f} configs/s "
          f"({rate * len(products):,.0f} config-product checks/s, {problems} problems)")
    print(f"ratio to target {TARGET:,.0f}/s: {rate / TARGET:.2f}x; "
          f"check/parse ratio: {rate / parse_rate:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
