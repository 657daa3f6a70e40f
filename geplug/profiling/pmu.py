"""aic_metrics: the product's PMU column block and *modelled* values for each task.

The columns are exactly the product's declared block for the group (``product.profiling.
pmu_columns``, formats.md §6.5); ``Custom:`` registers give one column per register. The values
are **modelled, not measured**: a simulator has no counters, so each value is derived from the
task's work (FLOPs, bytes moved, cube share, duration, block dim) and the product's compute
model (``product.compute``: clock, cores, peak rates, memory bandwidth). They are internally
consistent (ratios = pipe time / task time; bandwidths = bytes / time) and good for comparing
ops relative to each other, never for absolute tuning. Tasks that do not run on AI Core / AI
Vector (AI_CPU, COMMUNICATION, ...) get ``N/A`` (formats.md §6.4 "PMU values").
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from geplug.products.schema import ComputeModel, Product
    from geplug.profiling.options import Effective

__all__ = ["PMU_TASK_TYPES", "PmuModel", "TaskWork", "na_metrics", "pmu_columns"]

PMU_TASK_TYPES = frozenset({"AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV"})
"""Task types that carry PMU counters."""
_UNIT = re.compile(r"\((us|GB/s|KB|%)\)$")
_NA = "N/A"


def _halves(block: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """Split a split-core block into (aic part, aiv part, tail ``cube_utilization(%)``)."""
    cols = list(block)
    tail = [cols.pop()] if cols and cols[-1] == "cube_utilization(%)" else []
    if "aiv_time(us)" in cols:
        i = cols.index("aiv_time(us)")
        return cols[:i], cols[i:], tail
    return cols, [], tail


def _custom_block(regs: Sequence[str], split: bool) -> list[str]:
    if not split:
        return ["aicore_time(us)", "total_cycles", *regs]
    return [
        "aicore_time(us)", "aic_total_cycles", *(f"aic_{r}" for r in regs),
        "aiv_time(us)", "aiv_total_cycles", *(f"aiv_{r}" for r in regs),
    ]


def pmu_columns(product: Product, eff: Effective) -> list[str]:
    """The PMU block of op_summary for ``eff``'s groups on ``product`` ([] when none)."""
    if not eff.pmu_on:
        return []
    caps = product.profiling
    if eff.aic_group == "Custom":
        aic_block = _custom_block(eff.aic_custom, caps.split_cores)
    else:
        aic_block = list(caps.pmu_columns[eff.aic_group])
    if not caps.split_cores or not eff.aiv_group:
        return aic_block
    if eff.aiv_group == "Custom":
        aiv_block = _custom_block(eff.aiv_custom, True)
    else:
        aiv_block = list(caps.pmu_columns[eff.aiv_group])
    aic, _, tail = _halves(aic_block)
    _, aiv, _ = _halves(aiv_block)
    return aic + aiv + tail


@attrs.frozen(kw_only=True)
class TaskWork:
    """What the model needs about one task."""

    task_type: str
    duration_us: float
    flops: float
    bytes_moved: float
    cube_fraction: float
    block_dim: int
    dtype: str


def _parse_column(column: str, split: bool) -> tuple[str, str]:
    """Column -> (half, base metric): ``aic_mac_ratio`` -> (aic, mac_ratio)."""
    if column == "aicore_time(us)":
        return ("aic" if split else "all"), "time"
    if column == "cube_utilization(%)":
        return "all", "cube_utilization"
    half = "all"
    name = column
    if column.startswith("aic_"):
        half, name = "aic", column[4:]
    elif column.startswith("aiv_"):
        half, name = "aiv", column[4:]
    return half, _UNIT.sub("", name)


def na_metrics(product: Product) -> tuple[str, ...]:
    """Base metric names (glob patterns, e.g. ``ub_*_bw``) whose column exists on ``product``
    but always holds ``N/A`` - 310b's vec / ub / bank columns (formats.md §6.5 "Other
    families"). Read from the declaration's ``profiling.pmu_na_metrics`` (empty when the
    declaration does not have the field)."""
    return tuple(getattr(product.profiling, "pmu_na_metrics", ()) or ())


class PmuModel:
    """Formats the PMU block of one product and group for each task."""

    def __init__(self, product: Product, columns: Sequence[str]) -> None:
        self.compute: ComputeModel = product.compute
        self.split = product.profiling.split_cores
        self.columns = list(columns)
        na = na_metrics(product)
        self._parsed = [
            (half, "" if any(fnmatch.fnmatchcase(base, p) for p in na) else base)
            for half, base in (_parse_column(c, self.split) for c in self.columns)
        ]
        """(half, base metric) per column; base "" = always N/A on this product."""

    def values(self, work: TaskWork) -> list[str]:
        """The formatted values of every column for ``work`` (``N/A`` where not applicable)."""
        if not self.columns:
            return []
        if work.task_type not in PMU_TASK_TYPES:
            return [_NA] * len(self.columns)
        cf = min(1.0, max(0.0, work.cube_fraction))
        halves: dict[str, dict[str, float] | None]
        if self.split:
            halves = {
                "aic": self._half(work, cf, cube=True) if cf > 0 else None,
                "aiv": self._half(work, 1.0 - cf, cube=False) if cf < 1 else None,
            }
            aic = halves["aic"]
            cycles = aic["total_cycles"] if aic else 0.0
        else:
            merged = self._half(work, 1.0 - cf, cube=False)
            cube = self._half(work, cf, cube=True)
            for key, value in cube.items():
                if key.startswith(("mac", "cube", "l0", "l1", "fixpipe", "GM_to_L1", "L0C")):
                    merged[key] = value
                elif key not in ("time", "total_cycles"):
                    merged[key] = merged.get(key, 0.0) + value
            merged["time"] = work.duration_us
            merged["total_cycles"] = self._cycles(work.duration_us, work.block_dim, True)
            merged["memory_bound"] = _memory_bound(merged)
            halves = {"all": merged}
            cycles = merged["total_cycles"] if cf > 0 else 0.0
        t = work.duration_us
        cube_util = (
            100.0 * cycles / (self.compute.clock_mhz * self.compute.ai_cores * t) if t > 0 else 0.0
        )
        out: list[str] = []
        for half, base in self._parsed:
            if not base:
                out.append(_NA)
                continue
            if base == "cube_utilization":
                out.append(f"{cube_util:.3f}")
                continue
            metrics = halves.get(half) if half in halves else halves.get("all")
            if metrics is None:
                out.append(_NA)
                continue
            found = metrics.get(base)
            if found is None and base.startswith("0x"):
                found = float(int(metrics["total_cycles"] * ((int(base, 16) % 7) + 1) / 8))
            out.append(_NA if found is None else _format(base, found))
        return out

    def _cycles(self, time_us: float, block_dim: int, cube: bool) -> float:
        cores = self.compute.ai_cores if cube else self.compute.vector_cores
        used = max(1, min(block_dim, cores))
        return float(round(time_us * self.compute.clock_mhz * used))

    def _half(self, work: TaskWork, share: float, *, cube: bool) -> dict[str, float]:
        cm = self.compute
        t = work.duration_us
        flops = work.flops * share
        nbytes = work.bytes_moved * share
        cores = cm.ai_cores if cube else cm.vector_cores
        used = max(1, min(work.block_dim, cores))
        table = cm.cube_tflops if cube else cm.vector_tflops
        peak = table.get(work.dtype) or (max(table.values()) if table else 0.0)
        per_core = peak * 1e6 / max(1, cores)  # FLOP per µs per core
        compute_t = min(t, flops / (per_core * used)) if per_core > 0 else 0.0
        bw = cm.memory_bandwidth_gbps * 1e3  # bytes per µs
        mem_t = min(t, nbytes / bw) if bw > 0 else 0.0
        read_b, write_b = 0.6 * nbytes, 0.4 * nbytes

        def ratio(x: float) -> float:
            return x / t if t > 0 else 0.0

        def gbps(b: float) -> float:
            return b / t / 1e3 if t > 0 else 0.0

        m: dict[str, float] = {
            "time": t,
            "total_cycles": self._cycles(t, work.block_dim, cube),
            "scalar_time": 0.05 * t,
            "mte2_time": 0.6 * mem_t,
            "icache_miss_rate": 0.01,
            "main_mem_read_bw": gbps(read_b),
            "main_mem_write_bw": gbps(write_b),
            "l2_read_bw": gbps(read_b * 1.25),
            "l2_write_bw": gbps(write_b),
            "read_main_memory_datas": read_b / 1024,
            "write_main_memory_datas": write_b / 1024,
        }
        lines = nbytes / 128.0
        hit = 0.7 if cube else 0.5
        m.update({
            "write_cache_hit": round(0.4 * lines * hit),
            "write_cache_miss_allocate": round(0.4 * lines * (1 - hit)),
            "r0_read_cache_hit": round(0.3 * lines * hit),
            "r0_read_cache_miss_allocate": round(0.3 * lines * (1 - hit)),
            "r1_read_cache_hit": round(0.3 * lines * hit),
            "r1_read_cache_miss_allocate": round(0.3 * lines * (1 - hit)),
            "read_local_l2_hit": round(0.6 * lines * hit),
            "read_local_l2_miss": round(0.6 * lines * (1 - hit)),
            "read_local_l2_victim": round(0.6 * lines * (1 - hit) * 0.5),
            "write_local_l2_hit": round(0.4 * lines * hit),
            "write_local_l2_miss": round(0.4 * lines * (1 - hit)),
            "write_local_l2_victim": round(0.4 * lines * (1 - hit) * 0.5),
        })
        if cube:
            m.update({
                "mac_time": compute_t,
                "mte1_time": 0.5 * compute_t,
                "fixpipe_time": 0.4 * mem_t,
                "mac_fp16_ratio": ratio(compute_t) if work.dtype in ("float16", "bfloat16")
                else 0.0,
                "mac_int8_ratio": ratio(compute_t) if work.dtype == "int8" else 0.0,
                "cube_fops": flops,
                "l1_read_bw": gbps(2 * read_b),
                "l1_write_bw": gbps(read_b),
                "l0a_read_bw": gbps(read_b), "l0a_write_bw": gbps(read_b),
                "l0b_read_bw": gbps(read_b), "l0b_write_bw": gbps(read_b),
                "l0c_read_bw_cube": gbps(write_b), "l0c_write_bw_cube": gbps(write_b),
                "ub_read_bw_scalar": gbps(0.05 * nbytes), "ub_write_bw_scalar": gbps(0.05 * nbytes),
                "GM_to_L1_datas": read_b / 1024, "L0C_to_L1_datas": 0.0,
                "L0C_to_GM_datas": write_b / 1024, "GM_to_UB_datas": 0.0, "UB_to_GM_datas": 0.0,
            })
        else:
            vec_kind = {"float32": "fp32", "float16": "fp16", "bfloat16": "fp16",
                        "int32": "int32", "int64": "int32"}.get(work.dtype, "misc")
            m.update({
                "vec_time": compute_t,
                "mte3_time": 0.4 * mem_t,
                "vector_fops": flops,
                **{f"vec_{k}_ratio": (ratio(compute_t) if k == vec_kind else 0.0)
                   for k in ("fp32", "fp16", "int32", "misc")},
                "ub_read_bw": gbps(2 * read_b), "ub_write_bw": gbps(2 * write_b),
                "l0c_read_bw": 0.0, "l0c_write_bw": 0.0,
                "ub_read_bw_vector": gbps(2 * read_b), "ub_write_bw_vector": gbps(2 * write_b),
                "ub_read_bw_scalar": gbps(0.05 * nbytes), "ub_write_bw_scalar": gbps(0.05 * nbytes),
                "ub_fixp2ub_write_bw": 0.0,
                "vec_bankgroup_cflt_ratio": 0.02 * ratio(compute_t),
                "vec_bank_cflt_ratio": 0.01 * ratio(compute_t),
                "vec_resc_cflt_ratio": 0.05 * ratio(compute_t),
                "GM_to_L1_datas": 0.0, "L0C_to_L1_datas": 0.0, "L0C_to_GM_datas": 0.0,
                "GM_to_UB_datas": read_b / 1024, "UB_to_GM_datas": write_b / 1024,
            })
        for key in [k for k in m if k.endswith("_time") and k != "time"]:
            pipe = key[: -len("_time")]
            m[f"{pipe}_ratio"] = ratio(m[key])
            m[f"{pipe}_exe_time"] = m[key]
            m[f"{pipe}_exe_ratio"] = ratio(m[key])
        m["memory_bound"] = _memory_bound(m)
        return m


def _memory_bound(m: dict[str, float]) -> float:
    """mte2_ratio / max(mac_ratio, vec_ratio) (formats.md §6.5 note 3)."""
    denom = max(m.get("mac_ratio", 0.0), m.get("vec_ratio", 0.0))
    return m.get("mte2_ratio", 0.0) / denom if denom > 0 else 0.0


_INT_SUFFIXES = ("total_cycles", "_cache_hit", "_cache_miss_allocate", "_l2_hit", "_l2_miss",
                 "_l2_victim", "fops")
"""Counter columns written as integers (cycles, cache events, floating-point operations)."""


def _format(base: str, value: float) -> str:
    if base.startswith("0x") or base.endswith(_INT_SUFFIXES):
        return str(int(value))
    return f"{value:.3f}"
