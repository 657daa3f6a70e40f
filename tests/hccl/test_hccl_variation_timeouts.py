"""Rank-to-rank variation (geplug.hccl.variation) and HCCL_EXEC_TIMEOUT's documented ranges."""

from __future__ import annotations

import statistics

import pytest

from geplug.errors import HcclError
from geplug.hccl import read_faults, read_settings
from geplug.hccl.faults import exec_timeout_error
from geplug.hccl.variation import DEFAULT_SIGMA, read_variation


def test_variation_is_on_by_default_and_differs_between_ranks():
    faults = read_faults({})
    factors = [faults.compute_factor(r, 8) for r in range(8)]
    assert len(set(factors)) == 8 and all(f != 1.0 for f in factors)


def test_variation_is_deterministic_for_a_seed_and_changes_with_it():
    a = [read_faults({"GEPLUG_SIM_SEED": "7"}).compute_factor(r, 4) for r in range(4)]
    b = [read_faults({"GEPLUG_SIM_SEED": "7"}).compute_factor(r, 4) for r in range(4)]
    c = [read_faults({"GEPLUG_SIM_SEED": "8"}).compute_factor(r, 4) for r in range(4)]
    assert a == b and a != c


def test_variation_spread_over_many_ranks_matches_the_published_figure():
    # Sinha et al., SC22: 8% average variation between GPUs of one SKU; sigma = 8% / 5.4
    factors = [read_faults({}).compute_factor(r, 4096) for r in range(4096)]
    assert statistics.pstdev(factors) == pytest.approx(DEFAULT_SIGMA, rel=0.05)
    q1, _, q3 = statistics.quantiles(factors, n=4)
    whiskers = 2 * 1.5 * (q3 - q1) + (q3 - q1)  # the box plot's whisker span
    assert whiskers == pytest.approx(0.08, rel=0.1)


def test_variation_zero_turns_it_off():
    faults = read_faults({"GEPLUG_SIM_RANK_VARIATION": "0"})
    assert [faults.compute_factor(r, 8) for r in range(8)] == [1.0] * 8


def test_a_one_rank_job_never_varies():
    assert read_faults({}).compute_factor(0, 1) == 1.0


def test_slow_rank_factor_multiplies_its_variation():
    env = {"GEPLUG_SIM_SLOW_RANK": "3:4"}
    slow = read_faults(env).compute_factor(3, 4)
    assert slow == pytest.approx(4 * read_faults({}).compute_factor(3, 4))


@pytest.mark.parametrize(("name", "raw"), [("GEPLUG_SIM_RANK_VARIATION", "0.5"),
                                           ("GEPLUG_SIM_RANK_VARIATION", "-0.01"),
                                           ("GEPLUG_SIM_RANK_VARIATION", "lots"),
                                           ("GEPLUG_SIM_SEED", "-1"),
                                           ("GEPLUG_SIM_SEED", "x")])
def test_bad_variation_values_name_the_variable_and_the_range(name, raw):
    with pytest.raises(HcclError) as err:
        read_variation({name: raw})
    assert err.value.option == name and repr(raw) in str(err.value)


@pytest.mark.parametrize("raw", ["0", "17341", "-5"])
def test_exec_timeout_outside_the_rounding_families_range_is_refused(raw):
    # training and inference series: (0, 17340], rounded down to a multiple of 68
    with pytest.raises(HcclError, match=r"HCCL_EXEC_TIMEOUT=.*out of range \(0, 17340\]"):
        read_settings({"HCCL_EXEC_TIMEOUT": raw}, exec_timeout_step_s=68)


def test_exec_timeout_below_one_step_is_one_step():
    assert read_settings({"HCCL_EXEC_TIMEOUT": "10"}, exec_timeout_step_s=68).exec_timeout_s == 68


def test_exec_timeout_zero_means_never_where_the_value_is_not_rounded():
    assert read_settings({"HCCL_EXEC_TIMEOUT": "0"}).exec_timeout_s == 0


def test_exec_timeout_above_the_a2_maximum_is_refused():
    with pytest.raises(HcclError, match=r"\[0, 2147483647\]"):
        read_settings({"HCCL_EXEC_TIMEOUT": "2147483648"})


def test_exec_timeout_error_carries_hccls_code_wording_and_the_late_rank():
    err = exec_timeout_error("hcom_allReduce__0_4_1", "hccl_world_group", [3], 0, 2.0, 2.0,
                             simulated=False)
    assert err.code == "EI0002" and err.ranks == (3,)
    assert str(err).startswith("EI0002: The wait execution of the Notify register times out. "
                               "Reason: The Notify register has not received the Notify "
                               "record from remote rank [3].")
