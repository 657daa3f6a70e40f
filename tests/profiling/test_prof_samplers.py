"""host_sys / host_sys_usage (real psutil samples) and the modelled sys_* device samplers."""

from __future__ import annotations

import os
import time

import pytest
from prof_helpers import drive, make_system, out_file, prof_dir, read_csv

pytest.importorskip("psutil")


def _sample_host(manager, out, seconds=0.6, **options):
    system = make_system(manager, out, **options)
    drive(system, 1)
    time.sleep(seconds)
    system.shutdown()
    return system


def test_host_sys_cpu_and_mem_are_sampled_at_the_requested_rate(manager, tmp_path):
    _sample_host(manager, tmp_path, 1.0, host_sys="cpu,mem", host_sys_usage_freq="20")
    _, cpu = read_csv(tmp_path, "host_cpu_usage")
    _, mem = read_csv(tmp_path, "host_mem_usage")
    assert len(cpu) == len(mem) >= 5
    ts = [float(r[0]) for r in cpu]
    rate = (len(ts) - 1) / ((ts[-1] - ts[0]) / 1e6)
    assert rate == pytest.approx(20, rel=0.2)
    assert float(mem[0][1]) > 1  # RSS of this process in MB


def test_host_sys_usage_collects_system_cpu_and_memory(manager, tmp_path):
    _sample_host(manager, tmp_path, host_sys_usage="cpu,mem", host_sys_usage_freq="20")
    header, rows = read_csv(tmp_path, "sys_mem")
    assert header == ["Timestamp(us)", "Total(MB)", "Used(MB)", "Usage(%)"]
    assert rows and float(rows[0][1]) > 0
    assert read_csv(tmp_path, "cpu_usage")[1]
    assert out_file(tmp_path, "host_cpu_usage") is None  # host_sys not asked


def test_host_sys_disk_and_network_are_sampled_or_listed_as_not_collectable(manager, tmp_path):
    _sample_host(manager, tmp_path, 0.3, host_sys="disk,network", host_sys_usage_freq="20")
    with open(os.path.join(prof_dir(tmp_path), "host", "collection_notice.txt")) as fh:
        notice = fh.read()
    for item, stem in (("disk", "host_disk_usage"), ("network", "host_network_usage")):
        collected = out_file(tmp_path, stem) is not None
        assert collected != (f"host_sys {item}: " in notice), item
        if collected:
            assert read_csv(tmp_path, stem)[1], item


def test_osrt_is_not_faked_and_the_notice_says_so(manager, tmp_path):
    with pytest.warns(UserWarning, match="osrt"):
        _sample_host(manager, tmp_path, 0.1, host_sys="cpu,osrt")
    with open(os.path.join(prof_dir(tmp_path), "host", "collection_notice.txt")) as fh:
        notice = fh.read()
    assert "osrt" in notice and "perf" in notice


def test_host_samples_appear_as_timeline_counters(manager, tmp_path):
    from prof_helpers import timeline

    _sample_host(manager, tmp_path, 0.3, host_sys="mem", host_sys_usage_freq="20")
    counters = [e for e in timeline(tmp_path) if e["ph"] == "C"]
    assert counters and all("Process RSS(MB)" in e["args"] for e in counters)


def _device_run(manager, out, steps=5, gap_us=100_000.0, product=None, **options):
    system = make_system(manager, out, product, **options)
    start = 1_700_000_000_000_000.0
    end = drive(system, steps, start=start, gap_us=gap_us)
    system.shutdown()
    return system, (end - gap_us - start) / 1e6


def test_sys_hardware_mem_freq_samples_the_device_timeline_at_its_rate(manager, tmp_path):
    _, span_s = _device_run(manager, tmp_path, sys_hardware_mem_freq="50")
    header, rows = read_csv(tmp_path, "hbm_llc")
    assert header[:3] == ["Device_id", "Timestamp(us)", "HBM Read(MB/s)"]
    assert len(rows) == pytest.approx(span_s * 50, rel=0.2)
    step = float(rows[1][1]) - float(rows[0][1])
    assert step == pytest.approx(1e6 / 50)
    assert any(float(r[2]) > 0 for r in rows)


def test_llc_profiling_write_switches_the_llc_metric(manager, tmp_path):
    _device_run(manager, tmp_path, sys_hardware_mem_freq="10", llc_profiling="write")
    header, _ = read_csv(tmp_path, "hbm_llc")
    assert "LLC Write(MB/s)" in header


@pytest.mark.geplug_product_capability("profiling.frequencies", "sys_io_sampling_freq")
def test_sys_io_sampling_reports_the_products_io_targets(manager, tmp_path, geplug_product):
    _device_run(manager, tmp_path, product=geplug_product, hccl="on", sys_io_sampling_freq="100")
    header, rows = read_csv(tmp_path, "sys_io")
    assert header[2:] == [c for t in geplug_product.profiling.sys_io_targets
                          for c in (f"{t} Rx(MB/s)", f"{t} Tx(MB/s)")]
    assert any(float(v) > 0 for r in rows for v in r[2:])  # the allreduce moved bytes


@pytest.mark.geplug_product_capability("profiling.frequencies", "sys_interconnection_freq")
def test_sys_interconnection_reports_the_products_links(manager, tmp_path, geplug_product):
    _device_run(manager, tmp_path, product=geplug_product, sys_interconnection_freq="20")
    header, _ = read_csv(tmp_path, "interconnect")
    assert header[2:] == [c for t in geplug_product.profiling.interconnect_targets
                          for c in (f"{t} Rx(MB/s)", f"{t} Tx(MB/s)")]


def test_only_the_samplers_the_product_declares_are_written(manager, tmp_path, geplug_product):
    freqs = {"sys_hardware_mem_freq": "hbm_llc", "sys_io_sampling_freq": "sys_io",
             "sys_interconnection_freq": "interconnect", "dvpp_freq": "dvpp"}
    _device_run(manager, tmp_path, product=geplug_product, steps=1, **dict.fromkeys(freqs, "10"))
    for option, stem in freqs.items():
        declared = option in geplug_product.profiling.frequencies
        assert (out_file(tmp_path, stem) is not None) == declared, option


@pytest.mark.geplug_product_capability("profiling.instr_profiling", "switch")
def test_instr_profiling_switch_samples_at_the_products_default_rate(manager, tmp_path,
                                                                      geplug_product):
    _device_run(manager, tmp_path, product=geplug_product, steps=2, gap_us=1000.0,
                instr_profiling="on")
    _, rows = read_csv(tmp_path, "instr_profiling")
    rng = geplug_product.profiling.frequencies.get("instr_profiling_freq")
    rate = (rng.default if rng is not None and rng.default else 1000)
    step = float(rows[1][1]) - float(rows[0][1])
    assert step == pytest.approx(1e6 / rate)


@pytest.mark.geplug_product_capability("profiling.instr_profiling", "frequency")
def test_instr_profiling_freq_samples_ai_core_busy_on_the_product(
        manager, tmp_path, geplug_product):
    _device_run(manager, tmp_path, product=geplug_product, steps=2, gap_us=1000.0,
                instr_profiling_freq="2000")
    header, rows = read_csv(tmp_path, "instr_profiling")
    assert header[2] == "AI Core Busy(%)"
    assert float(rows[1][1]) - float(rows[0][1]) == pytest.approx(500.0)


def test_dvpp_freq_writes_dvpp_samples(manager, tmp_path):
    _, span_s = _device_run(manager, tmp_path, dvpp_freq="20")
    _, rows = read_csv(tmp_path, "dvpp")
    assert len(rows) == pytest.approx(span_s * 20, rel=0.2)


def test_instr_profiling_freq_samples_ai_core_busy(manager, tmp_path):
    _device_run(manager, tmp_path, steps=2, gap_us=1000.0, instr_profiling_freq="1000")
    header, rows = read_csv(tmp_path, "instr_profiling")
    assert header[2] == "AI Core Busy(%)"
    assert max(float(r[2]) for r in rows) > 0


def test_no_sampler_files_without_frequencies(manager, tmp_path):
    _device_run(manager, tmp_path, steps=1)
    for stem in ("hbm_llc", "sys_io", "interconnect", "dvpp", "instr_profiling"):
        assert out_file(tmp_path, stem) is None
