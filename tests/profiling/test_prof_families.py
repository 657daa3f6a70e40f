"""op_summary PMU blocks against the literal column lists of formats.md §6.5, per family.

These pin the output of each product family to the reference text itself (not only to the
product's declaration), so a declaration drifting from the reference fails here. Each test
skips where its product is not installed.
"""

from __future__ import annotations

import pytest
from prof_helpers import read_csv, run

from geplug.profiling.export import op_summary_header
from geplug.testing.plugin import require_product

BASE = len(op_summary_header([]))

# formats.md §6.5 "910b / a3 exact PMU blocks"
EXACT_910B = {
    "PipeUtilization": "aicore_time(us), aic_total_cycles, aic_mac_time(us), aic_mac_ratio, "
    "aic_scalar_time(us), aic_scalar_ratio, aic_mte1_time(us), aic_mte1_ratio, "
    "aic_mte2_time(us), aic_mte2_ratio, aic_fixpipe_time(us), aic_fixpipe_ratio, "
    "aic_icache_miss_rate, aiv_time(us), aiv_total_cycles, aiv_vec_time(us), aiv_vec_ratio, "
    "aiv_scalar_time(us), aiv_scalar_ratio, aiv_mte2_time(us), aiv_mte2_ratio, "
    "aiv_mte3_time(us), aiv_mte3_ratio, aiv_icache_miss_rate, cube_utilization(%)",
    "ArithmeticUtilization": "aicore_time(us), aic_total_cycles, aic_mac_fp16_ratio, "
    "aic_mac_int8_ratio, aic_cube_fops, aiv_time(us), aiv_total_cycles, aiv_vec_fp32_ratio, "
    "aiv_vec_fp16_ratio, aiv_vec_int32_ratio, aiv_vec_misc_ratio, aiv_vector_fops",
    "Memory": "aicore_time(us), aic_total_cycles, aic_l1_read_bw(GB/s), aic_l1_write_bw(GB/s), "
    "aic_main_mem_read_bw(GB/s), aic_main_mem_write_bw(GB/s), aic_l2_read_bw(GB/s), "
    "aic_l2_write_bw(GB/s), aiv_time(us), aiv_total_cycles, aiv_ub_read_bw(GB/s), "
    "aiv_ub_write_bw(GB/s), aiv_main_mem_read_bw(GB/s), aiv_main_mem_write_bw(GB/s), "
    "aiv_l2_read_bw(GB/s), aiv_l2_write_bw(GB/s)",
    "MemoryL0": "aicore_time(us), aic_total_cycles, aic_l0a_read_bw(GB/s), "
    "aic_l0a_write_bw(GB/s), aic_l0b_read_bw(GB/s), aic_l0b_write_bw(GB/s), "
    "aic_l0c_read_bw_cube(GB/s), aic_l0c_write_bw_cube(GB/s), aiv_time(us), aiv_total_cycles, "
    "aiv_l0c_read_bw(GB/s), aiv_l0c_write_bw(GB/s)",
    "ResourceConflictRatio": "aicore_time(us), aic_total_cycles, aiv_time(us), "
    "aiv_total_cycles, aiv_vec_bankgroup_cflt_ratio, aiv_vec_bank_cflt_ratio, "
    "aiv_vec_resc_cflt_ratio",
    "MemoryUB": "aicore_time(us), aic_total_cycles, aic_ub_read_bw_scalar(GB/s), "
    "aic_ub_write_bw_scalar(GB/s), aiv_time(us), aiv_total_cycles, "
    "aiv_ub_read_bw_vector(GB/s), aiv_ub_write_bw_vector(GB/s), aiv_ub_read_bw_scalar(GB/s), "
    "aiv_ub_write_bw_scalar(GB/s)",
    "L2Cache": "aicore_time(us), aic_total_cycles, aic_write_cache_hit, "
    "aic_write_cache_miss_allocate, aic_r0_read_cache_hit, aic_r0_read_cache_miss_allocate, "
    "aic_r1_read_cache_hit, aic_r1_read_cache_miss_allocate, aiv_time(us), aiv_total_cycles, "
    "aiv_write_cache_hit, aiv_write_cache_miss_allocate, aiv_r0_read_cache_hit, "
    "aiv_r0_read_cache_miss_allocate, aiv_r1_read_cache_hit, aiv_r1_read_cache_miss_allocate",
    "MemoryAccess": "aicore_time(us), aic_total_cycles, aic_read_main_memory_datas(KB), "
    "aic_write_main_memory_datas(KB), aic_GM_to_L1_datas(KB), aic_L0C_to_L1_datas(KB), "
    "aic_L0C_to_GM_datas(KB), aic_GM_to_UB_datas(KB), aic_UB_to_GM_datas(KB), aiv_time(us), "
    "aiv_total_cycles, aiv_read_main_memory_datas(KB), aiv_write_main_memory_datas(KB), "
    "aiv_GM_to_L1_datas(KB), aiv_L0C_to_L1_datas(KB), aiv_L0C_to_GM_datas(KB), "
    "aiv_GM_to_UB_datas(KB), aiv_UB_to_GM_datas(KB)",
}

# formats.md §6.5 base table, unprefixed, without the fixpipe columns (910, 310p)
UNPREFIXED = {
    "ArithmeticUtilization": "aicore_time(us), total_cycles, mac_fp16_ratio, mac_int8_ratio, "
    "vec_fp32_ratio, vec_fp16_ratio, vec_int32_ratio, vec_misc_ratio, cube_fops, vector_fops",
    "PipeUtilization": "aicore_time(us), total_cycles, vec_time(us), vec_ratio, mac_time(us), "
    "mac_ratio, scalar_time(us), scalar_ratio, mte1_time(us), mte1_ratio, mte2_time(us), "
    "mte2_ratio, mte3_time(us), mte3_ratio, icache_miss_rate, memory_bound, "
    "cube_utilization(%)",
    "Memory": "aicore_time(us), total_cycles, ub_read_bw(GB/s), ub_write_bw(GB/s), "
    "l1_read_bw(GB/s), l1_write_bw(GB/s), l2_read_bw(GB/s), l2_write_bw(GB/s), "
    "main_mem_read_bw(GB/s), main_mem_write_bw(GB/s)",
    "MemoryL0": "aicore_time(us), total_cycles, l0a_read_bw(GB/s), l0a_write_bw(GB/s), "
    "l0b_read_bw(GB/s), l0b_write_bw(GB/s), l0c_read_bw(GB/s), l0c_write_bw(GB/s), "
    "l0c_read_bw_cube(GB/s), l0c_write_bw_cube(GB/s)",
    "ResourceConflictRatio": "aicore_time(us), total_cycles, vec_bankgroup_cflt_ratio, "
    "vec_bank_cflt_ratio, vec_resc_cflt_ratio",
    "MemoryUB": "aicore_time(us), total_cycles, ub_read_bw_vector(GB/s), "
    "ub_write_bw_vector(GB/s), ub_read_bw_scalar(GB/s), ub_write_bw_scalar(GB/s)",
}


def _cols(text: str) -> list[str]:
    return [c.strip() for c in text.split(",")]


def _block(manager, out, product, group):
    run(manager, out / group, product, steps=1, aic_metrics=group)
    header, _ = read_csv(out / group, "op_summary")
    return header[BASE:]


@pytest.mark.parametrize("name", ["atlas_a2", "atlas_a3"])
def test_910b_and_a3_write_the_exact_blocks_of_the_reference(manager, tmp_path, name):
    product = require_product(name)
    assert set(product.profiling.pmu_columns) == set(EXACT_910B)
    for group, text in EXACT_910B.items():
        assert _block(manager, tmp_path, product, group) == _cols(text), group


@pytest.mark.parametrize("name", ["atlas_train", "atlas_infer"])
def test_910_and_310p_write_unprefixed_blocks_without_fixpipe(manager, tmp_path, name):
    product = require_product(name)
    assert set(product.profiling.pmu_columns) == set(UNPREFIXED)  # the first six groups
    for group, text in UNPREFIXED.items():
        assert _block(manager, tmp_path, product, group) == _cols(text), group


def test_950_blocks_follow_the_reference_differences(manager, tmp_path):
    product = require_product("atlas_350")
    groups = set(product.profiling.pmu_columns)
    assert "MemoryAccess" not in groups and "L2Cache" in groups
    arith = _block(manager, tmp_path, product, "ArithmeticUtilization")
    assert [c for c in arith if c.startswith("aic_") and c != "aic_total_cycles"] == [
        "aic_mac_fp16_ratio", "aic_mac_int8_ratio", "aic_cube_fops"]
    assert not [c for c in arith if "vec_" in c]
    assert not [c for c in _block(manager, tmp_path, product, "Memory") if "l2_" in c]
    assert "aiv_l0c_write_bw(GB/s)" not in _block(manager, tmp_path, product, "MemoryL0")
    assert not [c for c in _block(manager, tmp_path, product, "ResourceConflictRatio")
                if "bankgroup" in c]
    assert "aic_ub_fixp2ub_write_bw(GB/s)" in _block(manager, tmp_path, product, "MemoryUB")
    l2 = _block(manager, tmp_path, product, "L2Cache")
    assert "aic_read_local_l2_hit" in l2 and not [c for c in l2 if "r0_read" in c]


def test_310b_defaults_to_pipeline_execute_utilization_with_split_prefixes(manager, tmp_path):
    product = require_product("atlas_200i_a2")
    run(manager, tmp_path, product, steps=1)
    header, _ = read_csv(tmp_path, "op_summary")
    block = header[BASE:]
    assert block[:3] == ["aicore_time(us)", "aic_total_cycles", "aic_mac_exe_time(us)"]
    assert "aiv_total_cycles" in block and "memory_bound" in block
    pipe = _block(manager, tmp_path, product, "PipeUtilization")
    assert not [c for c in pipe if "fixpipe" in c]  # formats.md §6.5 note 2
