"""Every reproduction of issue 15: a clear error naming the input, exit status 1 or 2, and
never a traceback (an uncaught exception fails the test through the ``cli`` fixture)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from geplug.config.parse import parse_mapping
from geplug.config.parse_common import parse_profiling_options
from geplug.errors import DumpError, ProfilingError, RankTableError
from geplug.products import build_product, read_declaration
from geplug.runtime.rank_table import read_rank_table
from geplug.testing.samples import card_files, minimal_toml

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _sample_product(versions: tuple[str, ...]):  # type: ignore[no-untyped-def]
    import tempfile

    import attrs

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "capabilities.toml")
        Path(path).write_text(minimal_toml("hostile_card"), encoding="utf-8")
        product = build_product(read_declaration(path))
    return attrs.evolve(product, runtime=attrs.evolve(product.runtime,
                                                      rank_table_versions=versions))


# -- capabilities.toml nested deeply --------------------------------------------------------


def _deep_array_toml(depth: int) -> str:
    return minimal_toml("deepcard", ("DeepSoC1",)) + f"\n[extra]\nx = {'[' * depth}1{']' * depth}\n"


@pytest.mark.parametrize("depth", [40, 5000])
def test_a_deeply_nested_capabilities_file_is_a_clear_error(tmp_path, depth) -> None:
    path = tmp_path / "capabilities.toml"
    path.write_text(_deep_array_toml(depth), encoding="utf-8")
    from geplug.errors import CapabilityError

    with pytest.raises(CapabilityError, match=r"capabilities\.toml.*(deeper than 32|nest)"):
        read_declaration(path)


@pytest.mark.parametrize("depth", [40, 5000])
@pytest.mark.usefixtures("fake_plugins_only")
def test_every_command_survives_a_plugin_with_a_deeply_nested_declaration(
        fake_distribution, cli, depth) -> None:
    fake_distribution("fake-deep", entry_points={"deepcard": "deepcard.hooks"},
                      files=card_files("deepcard", _deep_array_toml(depth)))
    code, out, err = cli("products")
    assert code in (1, 2)
    code, out, err = cli("plugins")
    assert code == 1
    assert "deepcard" in out and "capabilities.toml" in out
    code, out, err = cli("check", "--product", "deepcard", os.devnull)
    assert code in (1, 2)
    assert "deepcard" in err


# -- TOML table header nested deeply ---------------------------------------------------------


def test_a_table_header_500_levels_deep_is_one_clear_problem(tmp_path, cli, card) -> None:
    path = tmp_path / "deep.toml"
    path.write_text("[" + ".".join(["a"] * 500) + "]\nx = 1\n", encoding="utf-8")
    code, out, err = cli("check", "--product", card, str(path))
    assert code == 1
    assert "deep.toml" in out + err and "deeper than 32 levels" in out + err


def test_a_nested_value_is_shown_abbreviated_not_whole(tmp_path, cli, card) -> None:
    path = tmp_path / "nested.toml"
    path.write_text("[" + ".".join(["a"] * 30) + "]\nx = 1\n", encoding="utf-8")
    code, out, _err = cli("check", "--product", card, str(path))
    assert code == 1
    line = next(ln for ln in out.splitlines() if "unknown option 'a'" in ln)
    assert "{...}" in line and line.count("a = ") <= 3


# -- rank tables -----------------------------------------------------------------------------


def _v10(rank_id: str) -> dict[str, object]:
    return {"version": "1.0", "server_count": "1", "status": "completed", "server_list": [
        {"server_id": "node0", "device": [
            {"device_id": "0", "device_ip": "192.168.1.1", "rank_id": rank_id}]}]}


def test_a_rank_id_of_four_billion_is_refused_at_once(tmp_path) -> None:
    path = tmp_path / "rank_table.json"
    path.write_text(json.dumps(_v10("4000000000")), encoding="utf-8")
    started = time.perf_counter()
    with pytest.raises(RankTableError, match=r"rank_id.*4000000000 is outside \[0, 65535\]"):
        read_rank_table(str(path), _sample_product(("1.0",)))
    assert time.perf_counter() - started < 5  # was: set(range(4000000001)), out of memory


def test_a_rank_id_of_thousands_of_digits_is_refused(tmp_path) -> None:
    path = tmp_path / "rank_table.json"
    path.write_text(json.dumps(_v10("9" * 5000)), encoding="utf-8")
    with pytest.raises(RankTableError, match=r"5000 digits is outside"):
        read_rank_table(str(path), _sample_product(("1.0",)))


def test_a_gap_far_from_the_ids_is_reported_in_bounded_time(tmp_path) -> None:
    table = _v10("0")
    table["server_list"][0]["device"].append(  # type: ignore[index]
        {"device_id": "1", "device_ip": "192.168.1.1", "rank_id": "65000"})
    path = tmp_path / "rank_table.json"
    path.write_text(json.dumps(table), encoding="utf-8")
    with pytest.raises(RankTableError, match=r"without gaps.*missing 1, 2, 3"):
        read_rank_table(str(path), _sample_product(("1.0",)))


@pytest.mark.parametrize("pods", [5, "pods", {"a": 1}, True])
def test_a_v12_super_pod_list_that_is_not_a_list_is_a_field_error(tmp_path, pods) -> None:
    table = _v10("0")
    table["version"] = "1.2"
    table["super_pod_list"] = pods
    path = tmp_path / "rank_table.json"
    path.write_text(json.dumps(table), encoding="utf-8")
    with pytest.raises(RankTableError, match=r"super_pod_list: expected a non-empty JSON array"):
        read_rank_table(str(path), _sample_product(("1.2",)))


def test_a_rank_table_that_is_not_utf8_names_the_file(tmp_path) -> None:
    path = tmp_path / "rank_table.json"
    path.write_bytes(b'{"version": "1.0", "x": "\xff\xfe"}')
    with pytest.raises(RankTableError, match=r"rank_table\.json.*not UTF-8"):
        read_rank_table(str(path), _sample_product(("1.0",)))


@pytest.mark.requires_products("atlas_a2")
def test_check_with_a_huge_rank_id_in_the_environment_table_exits_1(
        tmp_path, cli, monkeypatch) -> None:
    path = tmp_path / "rank_table.json"
    path.write_text(json.dumps(_v10("4000000000")), encoding="utf-8")
    monkeypatch.setenv("RANK_TABLE_FILE", str(path))
    monkeypatch.setenv("RANK_ID", "0")
    config = tmp_path / "session.toml"
    config.write_text('precision_mode = "allow_fp32_to_fp16"\n', encoding="utf-8")
    code, out, _err = cli("check", "--product", "atlas_a2", str(config))
    assert code == 1
    assert "rank_id" in out and "65535" in out


@pytest.mark.requires_products("atlas_a3")
@pytest.mark.parametrize(("change", "expected"), [
    ({"super_pod_list": 5}, "super_pod_list"),
    ({"rank_id": "4000000000"}, "65535"),
], ids=["super_pod_list-not-a-list", "rank_id-4e9"])
def test_check_with_a_broken_v12_table_in_the_environment_exits_1(
        tmp_path, cli, monkeypatch, change, expected) -> None:
    table = _v10(change.get("rank_id", "0"))
    table["version"] = "1.2"
    if "super_pod_list" in change:
        table["super_pod_list"] = change["super_pod_list"]
    path = tmp_path / "rank_table.json"
    path.write_text(json.dumps(table), encoding="utf-8")
    monkeypatch.setenv("RANK_TABLE_FILE", str(path))
    monkeypatch.setenv("RANK_ID", "0")
    config = tmp_path / "session.toml"
    config.write_text('precision_mode = "allow_fp32_to_fp16"\n', encoding="utf-8")
    started = time.perf_counter()
    code, out, err = cli("check", "--product", "atlas_a3", str(config))
    assert time.perf_counter() - started < 30  # was: set(range(4000000001)), out of memory
    assert code == 1
    assert expected in out + err and "Traceback" not in out + err


# -- inf / nan in profiling_options ------------------------------------------------------------


@pytest.mark.parametrize("key", ["storage_limit", "task_time", "aic_metrics", "output",
                                 "host_sys_usage_freq"])
@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), 1e300])
def test_a_non_finite_profiling_value_from_the_api_is_a_problem(key, value) -> None:
    options, problems = parse_profiling_options({key: value})
    assert options is None or problems
    assert any(p.option == f"profiling_options.{key}" and p.severity == "error"
               for p in problems)
    assert all(p.render() for p in problems)


@pytest.mark.parametrize("text", ['{"storage_limit": Infinity}', '{"task_time": NaN}',
                                  '{"output": -Infinity}'])
def test_a_non_finite_profiling_value_in_json_is_a_problem(text) -> None:
    _, problems = parse_mapping({"profiling_options": text})
    assert any(p.severity == "error" and "a string" in p.message for p in problems)


@pytest.mark.parametrize("literal", ["inf", "nan", "-inf", "+inf"])
def test_a_non_finite_profiling_value_in_toml_exits_1(tmp_path, cli, card, literal) -> None:
    path = tmp_path / "prof.toml"
    path.write_text(f"profiling_mode = true\n[profiling_options]\nstorage_limit = {literal}\n"
                    f"task_time = {literal}\n", encoding="utf-8")
    code, out, _err = cli("check", "--product", card, str(path))
    assert code == 1
    assert "profiling_options.storage_limit" in out and "profiling_options.task_time" in out


@pytest.mark.parametrize("text", ['{"storage_limit": Infinity}', '{"task_time": NaN}'])
def test_a_non_finite_profiling_value_in_a_json_string_exits_1(tmp_path, cli, card,
                                                               text) -> None:
    path = tmp_path / "prof.toml"
    path.write_text(f"profiling_mode = true\nprofiling_options = '{text}'\n", encoding="utf-8")
    code, out, _err = cli("check", "--product", card, str(path))
    assert code == 1
    assert "profiling_options" in out and "a string" in out


# -- ATC argv ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["--8", "-+8", "- 8", "--", "-"])
def test_an_atc_integer_with_several_signs_is_e10003(cli, card, value) -> None:
    code, out, _err = cli("check", "--product", card,
                         f"--atc=--op_debug_level={value} --soc_version=HostileSoC1")
    assert code == 1
    assert "--op_debug_level" in out and "E10003" in out


# -- profiling directories -----------------------------------------------------------------------

_HEADER = ["Op Name", "OP Type", "Task Type", "Task Start Time(us)", "Task Duration(us)"]


def _prof(tmp_path: Path, rows: list[list[str]] | None = None) -> tuple[Path, Path]:
    prof = tmp_path / "PROF_000001_20260101000000000_ABCDEFGHIJKLMNOP"
    out = prof / "mindstudio_profiler_output"
    out.mkdir(parents=True)
    summary = out / "op_summary_20260101000000.csv"
    lines = [",".join(_HEADER)] + [",".join(r) for r in (rows if rows is not None else [
        ["conv1", "Conv2D", "AI_CORE", "100.0", "5.0"]])]
    summary.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return prof, summary


def test_profile_summary_of_a_short_csv_row_names_file_and_line(tmp_path, cli) -> None:
    prof, summary = _prof(tmp_path, [["conv1", "Conv2D", "AI_CORE", "100.0", "5.0"], ["fc1"]])
    code, _out, err = cli("profile", "summary", str(prof))
    assert code == 1
    assert summary.name in err and "line 3" in err and "1 fields, the header has 5" in err


def test_profile_summary_of_a_csv_replaced_by_a_directory(tmp_path, cli) -> None:
    prof, summary = _prof(tmp_path)
    summary.unlink()
    summary.mkdir()
    code, _out, err = cli("profile", "summary", str(prof))
    assert code == 1
    assert summary.name in err and "is a directory" in err


def test_profile_summary_of_a_non_utf8_op_summary(tmp_path, cli) -> None:
    prof, summary = _prof(tmp_path)
    summary.write_bytes(",".join(_HEADER).encode() + b"\nconv\xff1,Conv2D,AI_CORE,1,2\n")
    code, _out, err = cli("profile", "summary", str(prof))
    assert code == 1
    assert summary.name in err and "not UTF-8" in err


@pytest.mark.parametrize("damage", ["short row", "directory", "non-utf8", "inf"])
def test_profile_plot_of_a_damaged_op_summary(tmp_path, cli, damage) -> None:
    pytest.importorskip("matplotlib")
    prof, summary = _prof(tmp_path)
    if damage == "short row":
        with summary.open("a", encoding="utf-8") as fh:
            fh.write("fc1,MatMul\n")
    elif damage == "directory":
        summary.unlink()
        summary.mkdir()
    elif damage == "non-utf8":
        summary.write_bytes(",".join(_HEADER).encode() + b"\nconv\xff1,Conv2D,AI_CORE,1,2\n")
    else:
        with summary.open("a", encoding="utf-8") as fh:
            fh.write("fc1,MatMul,AI_CORE,inf,nan\n")
    target = tmp_path / "plot.png"
    code, _out, err = cli("profile", "plot", str(prof), "--out", str(target))
    if damage == "inf":  # a task without finite times is not drawn; the rest is
        assert code == 0 and target.is_file()
    else:
        assert code == 1 and summary.name in err
        assert not target.exists()
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_profile_summary_of_a_db_only_directory_names_the_database(tmp_path, cli) -> None:
    prof = tmp_path / "PROF_000001_20260101000000000_ABCDEFGHIJKLMNOP"
    prof.mkdir()
    (prof / "msprof_20260101000000.db").write_bytes(b"SQLite format 3\x00 damaged")
    before = (prof / "msprof_20260101000000.db").read_bytes()
    code, _out, err = cli("profile", "summary", str(prof))
    assert code == 1
    assert "msprof_20260101000000.db" in err and "DB-only export" in err
    assert (prof / "msprof_20260101000000.db").read_bytes() == before


# -- dump ls -----------------------------------------------------------------------------------


def test_dump_ls_of_a_short_statistics_row_names_file_and_line(tmp_path, cli) -> None:
    step = tmp_path / "20260101000000" / "0" / "model" / "1" / "0"
    step.mkdir(parents=True)
    stats = step / "statistic.csv"
    stats.write_text("Op Type,Op Name,Task ID,Input/Output,Data Type,Shape\n"
                     "MatMulV2,fc1,1,Input,DT_FLOAT,(2 2)\nMatMulV2,fc1\n", encoding="utf-8")
    code, _out, err = cli("dump", "ls", str(tmp_path))
    assert code == 1
    assert "statistic.csv" in err and "line 3" in err


def test_dump_mapping_that_is_not_utf8_is_a_dump_error(tmp_path) -> None:
    from geplug.dump.reader import read_mapping

    (tmp_path / "mapping.csv").write_bytes(b"1,\xff\xfe\n")
    with pytest.raises(DumpError, match=r"mapping\.csv.*not UTF-8"):
        read_mapping(str(tmp_path))


# -- control characters -------------------------------------------------------------------------


def test_control_characters_in_keys_and_values_stay_on_one_line(tmp_path, cli, card) -> None:
    path = tmp_path / "ctl.toml"
    path.write_text('"ab\\ncd\\u001b[31m" = 1\nprecision_mode = "x\\ny\\rz"\n',
                    encoding="utf-8")
    code, out, _err = cli("check", "--product", card, str(path))
    assert code == 1
    lines = [ln for ln in out.splitlines() if ln.strip().startswith("error:")]
    assert len(lines) == 2  # one line per problem
    assert "\x1b" not in out and "\r" not in out
    assert "ab\\ncd\\x1b[31m" in lines[0] and "x\\ny\\rz" in lines[1]


def test_control_characters_in_an_error_path_are_escaped(tmp_path, cli) -> None:
    bad = tmp_path / "PROF_000001_20260101000000000_ABCDEFGHIJKLMNOP\x1b[2J"
    code, _out, err = cli("profile", "summary", str(bad))
    assert code == 1
    assert "\x1b" not in err and "\\x1b[2J" in err


def test_profiling_error_is_a_geplug_error() -> None:  # the CLI maps it to exit 1
    from geplug.errors import GeplugError

    assert issubclass(ProfilingError, GeplugError)


@pytest.mark.parametrize("value", ["--0", "-+1", "9" * 5000])
def test_a_rank_variable_with_several_signs_or_thousands_of_digits_is_a_config_error(
        value) -> None:  # found by tests/fuzz/test_fuzz_rank_tables.py
    from geplug.errors import ConfigError
    from geplug.runtime.rank import read_rank_info

    with pytest.raises(ConfigError, match=r"RANK_ID"):
        read_rank_info({"RANK_ID": value}, _sample_product(("1.0",)))


@pytest.mark.parametrize("value", ["--0", "-+1", "-", "9" * 30])
def test_a_ge_integer_with_several_signs_is_a_problem(value) -> None:  # found by the fuzz suite
    from geplug.config.parse import parse_ge_options

    _, problems = parse_ge_options({"ge.opDebugLevel": value})
    assert [p.option for p in problems if p.severity == "error"] == ["ge.opDebugLevel"]


@pytest.mark.parametrize("value", ["--0", "-+1"])
def test_a_device_id_variable_with_several_signs_is_a_problem(value) -> None:
    from geplug.config import SessionConfig, check

    problems = check(SessionConfig(), _sample_product(("1.0",)), env={"ASCEND_DEVICE_ID": value})
    assert any(p.option == "ASCEND_DEVICE_ID" and p.severity == "error" for p in problems)
