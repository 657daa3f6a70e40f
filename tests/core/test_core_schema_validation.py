"""Every validation error path of ``capabilities.toml`` names the file, the key and expected/got."""

from __future__ import annotations

import re

import pytest

from geplug.errors import CapabilityError
from geplug.products import build_product, read_declaration
from geplug.testing.samples import minimal_toml


def _load(write_toml, text: str):
    path = write_toml(text)
    return build_product(read_declaration(path)), path


def _error(write_toml, text: str) -> tuple[CapabilityError, str]:
    path = write_toml(text)
    with pytest.raises(CapabilityError) as info:
        build_product(read_declaration(path))
    assert str(path) in str(info.value), "the message names the file"
    assert info.value.path == str(path)
    return info.value, str(info.value)


def _sub(old: str, new: str, text: str | None = None) -> str:
    text = text if text is not None else minimal_toml()
    assert old in text, old
    return text.replace(old, new, 1)


def test_minimal_declaration_is_valid(write_toml) -> None:
    product, path = _load(write_toml, minimal_toml())
    assert product.name == "test_card" and product.source_path == str(path)
    assert product.op("Unlisted").op_type == "Unlisted"


def test_unreadable_file_names_the_path(tmp_path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(CapabilityError, match=re.escape(repr(str(missing)))):
        read_declaration(missing)


def test_toml_syntax_error_names_file_and_position(write_toml) -> None:
    _, msg = _error(write_toml, _sub('l2 = "l2"', "l2 = = 1"))
    assert "not valid TOML" in msg and "line" in msg


def test_wrong_schema_version_says_expected_and_got(write_toml) -> None:
    err, msg = _error(write_toml, _sub("schema_version = 1", "schema_version = 7"))
    assert err.key == "schema_version" and "expected 1, got 7" in msg


def test_missing_schema_version_is_reported(write_toml) -> None:
    err, msg = _error(write_toml, _sub("schema_version = 1", ""))
    assert err.key == "schema_version" and "got None" in msg


def test_missing_product_name_is_reported(write_toml) -> None:
    err, msg = _error(write_toml, _sub('name = "test_card"', ""))
    assert err.key == "product.name" and "expected a string" in msg


def test_extends_must_be_a_string(write_toml) -> None:
    err, _ = _error(write_toml, _sub('name = "test_card"', 'name = "test_card"\nextends = 3'))
    assert err.key == "product.extends"


def test_product_name_must_be_an_identifier(write_toml) -> None:
    err, msg = _error(write_toml, _sub('name = "test_card"', 'name = "Test Card"'))
    assert err.key == "product.name" and "got 'Test Card'" in msg


def test_unknown_top_level_section_is_reported(write_toml) -> None:
    err, msg = _error(write_toml, minimal_toml() + "\n[profilng]\nl2 = 'x'\n")
    assert ("profilng", ) == tuple(k for k, _ in err.errors)[:1]
    assert "got unknown section 'profilng'" in msg


def test_unknown_product_key_is_reported(write_toml) -> None:
    err, msg = _error(write_toml, _sub('family_id = "test"', 'family_id = "test"\ncolour = 1'))
    assert err.key == "product.colour" and "got unknown key 'colour'" in msg


def test_missing_product_key_says_what_is_expected(write_toml) -> None:
    err, msg = _error(write_toml, _sub('family_id = "test"', ""))
    assert err.key == "product.family_id" and "expected a string" in msg


def test_missing_section_is_reported(write_toml) -> None:
    text = _sub("[dump]\ndebug_modes = [\"all\"]\n", "")
    err, msg = _error(write_toml, text)
    assert err.key == "dump" and "expected a [dump] table, got nothing" in msg


def test_section_that_is_not_a_table_is_reported(write_toml) -> None:
    text = _sub("[dump]\ndebug_modes = [\"all\"]\n", "").replace(
        "schema_version = 1", "schema_version = 1\ndump = 5")
    err, msg = _error(write_toml, text)
    assert err.key == "dump" and "got 5" in msg


def test_unknown_section_key_lists_the_known_keys(write_toml) -> None:
    err, msg = _error(write_toml, _sub("[dump]\n", "[dump]\noverflow = 1\n"))
    assert err.key == "dump.overflow" and "'debug_modes'" in msg


def test_missing_required_key_names_its_type(write_toml) -> None:
    err, msg = _error(write_toml, _sub("split_cores = false\n", ""))
    assert err.key == "profiling.split_cores" and "expected true or false" in msg


def test_wrong_scalar_type_says_expected_and_got(write_toml) -> None:
    err, msg = _error(write_toml, _sub("ai_cores = 2", 'ai_cores = "two"'))
    assert err.key == "compute.ai_cores" and "expected an integer, got 'two'" in msg


def test_bool_is_not_accepted_as_an_integer(write_toml) -> None:
    err, _ = _error(write_toml, _sub("ai_cores = 2", "ai_cores = true"))
    assert err.key == "compute.ai_cores"


def test_wrong_list_item_type_names_its_index(write_toml) -> None:
    err, msg = _error(write_toml, _sub('aic_metrics = ["PipeUtilization", "Memory"]',
                                       'aic_metrics = ["PipeUtilization", 4]'))
    assert err.key == "profiling.aic_metrics[1]" and "got 4" in msg


def test_wrong_mapping_value_type_names_its_key(write_toml) -> None:
    err, msg = _error(write_toml, _sub("cube_tflops = { float16 = 10.0 }",
                                       'cube_tflops = { float16 = "fast" }'))
    assert err.key == "compute.cube_tflops.float16" and "expected a number" in msg


def test_nested_record_errors_name_the_full_path(write_toml) -> None:
    err, _ = _error(write_toml, _sub("min = 1\nmax = 100", "min = 1\nmax = \"100\""))
    assert err.key == "profiling.frequencies.sys_hardware_mem_freq.max"


def test_value_outside_a_choice_lists_the_choices(write_toml) -> None:
    err, msg = _error(write_toml, _sub('instr_profiling = "unsupported"',
                                       'instr_profiling = "sometimes"'))
    assert err.key == "profiling.instr_profiling"
    assert "expected one of ['switch', 'frequency', 'unsupported'], got 'sometimes'" in msg


def test_op_class_outside_its_choice_is_reported(write_toml) -> None:
    err, msg = _error(write_toml, _sub('op_class = "matrix"', 'op_class = "cube"'))
    assert err.key == "ops.MatMulV2.op_class" and "got 'cube'" in msg


def test_missing_default_op_is_reported(write_toml) -> None:
    text = _sub('[ops.default]\nop_class = "vector"\naicore_dtypes = ["float16", "float32"]\n'
                'aicpu_dtypes = ["float32", "float64"]\n', "")
    err, msg = _error(write_toml, text)
    assert err.key == "ops.default" and "[ops.default]" in msg


def test_op_entry_that_is_not_a_table_is_reported(write_toml) -> None:
    text = _sub("[ops.default]", "[ops]\nRelu = 1\n\n[ops.default]")
    err, msg = _error(write_toml, text)
    assert err.key == "ops.Relu" and "expected a table, got 1" in msg


def test_unknown_dtype_names_op_engine_and_index(write_toml) -> None:
    err, msg = _error(write_toml, _sub('aicore_dtypes = ["float16"]',
                                       'aicore_dtypes = ["float17"]'))
    assert err.key == "ops.MatMulV2.aicore_dtypes[0]" and "got 'float17'" in msg


def test_soc_versions_must_not_be_empty(write_toml) -> None:
    err, msg = _error(write_toml, minimal_toml(socs=()))
    assert err.key == "product.soc_versions" and "at least one" in msg


def test_soc_versions_must_not_repeat(write_toml) -> None:
    err, msg = _error(write_toml, minimal_toml(socs=("A1", "A1")))
    assert err.key == "product.soc_versions" and "'A1'" in msg


def test_frequency_min_above_max_is_reported(write_toml) -> None:
    err, msg = _error(write_toml, _sub("min = 1\nmax = 100\ndefault = 50",
                                       "min = 200\nmax = 100"))
    assert err.key == "profiling.frequencies.sys_hardware_mem_freq"
    assert "min=200, max=100" in msg


def test_frequency_default_outside_the_range_is_reported(write_toml) -> None:
    err, msg = _error(write_toml, _sub("default = 50", "default = 500"))
    assert err.key == "profiling.frequencies.sys_hardware_mem_freq.default"
    assert "expected a value in [1, 100], got 500" in msg


def test_aic_metrics_default_must_be_a_declared_group(write_toml) -> None:
    err, msg = _error(write_toml, _sub('aic_metrics_default = "PipeUtilization"',
                                       'aic_metrics_default = "MemoryAccess"'))
    assert err.key == "profiling.aic_metrics_default" and "got 'MemoryAccess'" in msg


def test_kernel_meta_level_must_be_an_op_debug_level(write_toml) -> None:
    err, msg = _error(write_toml, _sub('"4" = [', '"5" = ['))
    assert err.key == "debug.kernel_meta.5" and "got '5'" in msg


def test_every_problem_of_a_file_is_reported_at_once(write_toml) -> None:
    text = _sub("ai_cores = 2", 'ai_cores = "two"', _sub("l2 = \"l2\"", "l2 = 2"))
    err, _ = _error(write_toml, text)
    assert {"compute.ai_cores", "profiling.l2"} <= {k for k, _ in err.errors}


def test_compute_counts_must_be_positive(write_toml) -> None:
    _err, msg = _error(write_toml, _sub("ai_cores = 2", "ai_cores = -8"))
    assert "compute.ai_cores" in msg and "expected a whole number >= 1, got -8" in msg


def test_compute_throughput_keys_must_be_dtypes(write_toml) -> None:
    _err, msg = _error(write_toml, _sub("cube_tflops = { float16 = 10.0 }",
                                       "cube_tflops = { float16 = 10.0, bfloat8 = 3.0 }"))
    assert "compute.cube_tflops.bfloat8" in msg and "got 'bfloat8'" in msg
