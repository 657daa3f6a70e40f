"""Seed details, sentence by sentence (each test quotes the seed sentence it checks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from config_helpers import errors_on, problems_of, warnings_on

from geplug.testing.plugin import require_product

P = "profiling_options"


def prof(**opts: str) -> dict[str, Any]:
    return {"profiling_mode": True, P: {"output": ".", "task_time": "on", **opts}}


@pytest.mark.geplug_requires_products("atlas_a2")
def test_a_frequency_of_zero_is_out_of_range(a2: Any) -> None:
    """Seed: "sys_hardware_mem_freq：... 范围[1,100]，单位Hz。" (range [1, 100] Hz)."""
    errors = errors_on(problems_of(prof(sys_hardware_mem_freq="0"), a2),
                       f"{P}.sys_hardware_mem_freq")
    assert errors and "should be in range [1,100]" in errors[0].message
    assert "0 collects nothing" in errors[0].hint and errors[0].code == "EK0003"


@pytest.mark.geplug_requires_products("atlas_350")
def test_atlas_350_frequency_message_names_the_qos_soc_maximum() -> None:
    """Seed: "Atlas 350 加速卡，Qos和SoC支持的采集频率最大支持配置10000，其他采集项支持的最大
    采集频率仍为100" (QoS and SoC up to 10000, every other item still up to 100)."""
    p350 = require_product("atlas_350")
    errors = errors_on(problems_of(prof(sys_hardware_mem_freq="10001"), p350),
                       f"{P}.sys_hardware_mem_freq")
    assert errors and "should be in range [1,10000]" in errors[0].message
    assert "up to 10000, every other item up to 100" in errors[0].message
    assert not errors_on(problems_of(prof(sys_hardware_mem_freq="10000"), p350),
                         f"{P}.sys_hardware_mem_freq")


@pytest.mark.geplug_requires_products("atlas_a2")
def test_empty_optypelist_for_implmode_means_off(a2: Any) -> None:
    """Seed: optypelist_for_implmode "默认值为空，代表不使能此配置" (empty, the default, means
    the setting is off)."""
    problems = problems_of({"optypelist_for_implmode": ""}, a2)
    assert not errors_on(problems, "optypelist_for_implmode")


@pytest.mark.parametrize(("item", "tools"), [("disk", "iotop"), ("osrt", "perf and ltrace")])
@pytest.mark.geplug_requires_products("atlas_a2")
def test_host_sys_disk_and_osrt_name_the_tools_they_need(a2: Any, item: str, tools: str) -> None:
    """Seed: "采集Host侧disk性能数据需要安装第三方开源工具iotop，采集osrt性能数据需要安装第三方开源
    工具perf和ltrace。" (disk needs iotop; osrt needs perf and ltrace)."""
    if item not in a2.profiling.host_sys:
        pytest.skip(f"{item} is not a host_sys item of atlas_a2")
    warnings = warnings_on(problems_of(prof(host_sys=f"cpu,{item}"), a2), f"{P}.host_sys")
    assert any(tools in w.message for w in warnings)


@pytest.mark.geplug_requires_products("atlas_a2")
def test_ini_mode_an_op_does_not_implement_is_reported(a2: Any, tmp_path: Path) -> None:
    """Seed 004: "如果算子只实现了一种则按照算子实现的方式运行" (an op that implements only one
    mode runs that implementation): an ini line asking for another mode changes nothing."""
    op_type = next(name for name, op in a2.ops.items()
                   if op.impl_modes and "high_precision" not in op.impl_modes)
    ini = tmp_path / "op_precision.ini"
    ini.write_text(f"{op_type}=high_precision\n")
    warnings = warnings_on(problems_of({"op_precision_mode": str(ini)}, a2), "op_precision_mode")
    assert any(f"{op_type} implements only" in w.message for w in warnings)
    ok = tmp_path / "ok.ini"
    ok.write_text(f"{op_type}={a2.ops[op_type].impl_modes[0]}\n")
    assert not [w for w in warnings_on(problems_of({"op_precision_mode": str(ok)}, a2),
                                       "op_precision_mode") if "implements only" in w.message]


@pytest.mark.geplug_requires_products("atlas_a2")
def test_resolve_shows_the_defaults_of_unset_profiling_switches(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Seed: task_trace/task_time "on：开启，默认值" (on is the default); hccl "可选on或off，默认为
    off"; aicpu "取值on/off，默认为off"; l2 "默认为off"; aic_metrics PipeUtilization
    "该项为默认值"."""
    import json

    from geplug.cli.main import main

    cfg = tmp_path / "c.toml"
    cfg.write_text(f'profiling_mode = true\n[profiling_options]\noutput = "{tmp_path}"\n')
    assert main(["resolve", str(cfg), "--product", "atlas_a2", "--format", "json"]) == 0
    opts = json.loads(capsys.readouterr().out)["config"]["profiling_options"]
    assert (opts["task_trace"], opts["task_time"]) == ("on", "on")
    assert (opts["hccl"], opts["aicpu"], opts["l2"]) == ("off", "off", "off")
    assert opts["aic_metrics"] == "PipeUtilization"
    assert main(["resolve", str(cfg), "--product", "atlas_a2"]) == 0
    assert '"task_time": "on"' in capsys.readouterr().out


EXC_L1 = ("dump数据存储路径优先级为：环境变量NPU_COLLECT_PATH > 环境变量ASCEND_WORK_PATH > "
          "默认路径（当前脚本执行路径下的extra-info目录）")


@pytest.mark.geplug_requires_products("atlas_a2")
def test_level_1_exception_dump_defaults_to_extra_info_in_the_cwd(a2: Any) -> None:
    """Seed 000, enable_exception_dump 1: "dump数据存储路径优先级为：环境变量NPU_COLLECT_PATH >
    环境变量ASCEND_WORK_PATH > 默认路径（当前脚本执行路径下的extra-info目录）"; the files go into
    the real stack's layout inside it (formats.md §4)."""
    from geplug.config import SessionConfig, resolve

    resolved = resolve(SessionConfig(enable_exception_dump=1), a2, env={}, cwd="/c")
    assert resolved.exception_dump_path == "/c/extra-info"
    assert resolved.exception_dump_dir == "/c/extra-info/data-dump/0"
    assert resolved.source("exception_dump_path") == "built-in default"


@pytest.mark.geplug_requires_products("atlas_a2")
@pytest.mark.parametrize(("env", "path"), [
    ({"NPU_COLLECT_PATH": "/n", "ASCEND_WORK_PATH": "/w"}, "/n"),
    ({"ASCEND_WORK_PATH": "/w"}, "/w"),
])
def test_level_1_exception_dump_path_follows_the_seeds_priority(
        a2: Any, env: dict[str, str], path: str) -> None:
    """Seed 000: NPU_COLLECT_PATH > ASCEND_WORK_PATH > ./extra-info (the sentence above)."""
    from geplug.config import SessionConfig, resolve

    resolved = resolve(SessionConfig(enable_exception_dump=1), a2, env=env, cwd="/c")
    assert resolved.exception_dump_path == path
    assert resolved.exception_dump_dir.startswith(path + "/")


@pytest.mark.geplug_requires_products("atlas_a2")
def test_level_2_exception_dump_defaults_to_the_device_directory(a2: Any) -> None:
    """Seed 000, enable_exception_dump 2: "dump数据存储路径优先级为：环境变量ASCEND_WORK_PATH >
    默认路径（指当前脚本执行路径下的extra-info/data-dump/<device_id>目录）"."""
    from geplug.config import SessionConfig, resolve

    resolved = resolve(SessionConfig(enable_exception_dump=2), a2,
                       env={"ASCEND_DEVICE_ID": "3"}, cwd="/c")
    assert resolved.exception_dump_path == resolved.exception_dump_dir == \
        "/c/extra-info/data-dump/3"


@pytest.mark.geplug_requires_products("atlas_a2")
def test_resolve_prints_the_seeds_exception_dump_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`geplug resolve` shows the storage path the seed names (``./extra-info`` for level 1)."""
    from geplug.cli.main import main

    for name in ("NPU_COLLECT_PATH", "ASCEND_WORK_PATH", "ASCEND_DUMP_SCENE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "c.toml"
    cfg.write_text("enable_exception_dump = 1\n")
    assert main(["resolve", str(cfg), "--product", "atlas_a2"]) == 0
    out = capsys.readouterr().out
    assert f"exception_dump_path = {str(tmp_path / 'extra-info')!r}" in out
