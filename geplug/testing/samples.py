"""Sample plugin sources for tests: a minimal valid declaration and plugin packages."""

from __future__ import annotations

import textwrap
import types

__all__ = ["MINIMAL_TOML", "card_files", "declaring_plugin", "hooks_source", "minimal_toml"]

MINIMAL_TOML = textwrap.dedent('''
    schema_version = 1

    [product]
    name = "{name}"
    display_name = "Test card {name}"
    family_id = "test"
    soc_versions = [{socs}]

    [runtime]
    initialize_system = true
    training = true

    [precision]
    modes = ["force_fp16", "must_keep_origin_dtype", "allow_fp32_to_fp16"]
    modes_v2 = ["fp16", "origin"]
    default_training = "must_keep_origin_dtype"
    default_training_v2 = "origin"

    [implmode]
    select_values = ["high_precision", "high_performance"]
    ini_values = ["high_precision", "high_performance"]
    optypelist_allowed = ["SoftmaxV2"]
    builtin_lists = {{ high_precision = {{ SoftmaxV2 = "high_precision" }} }}

    [dump]
    debug_modes = ["all"]

    [profiling]
    aic_metrics = ["PipeUtilization", "Memory"]
    aic_metrics_default = "PipeUtilization"
    split_cores = false
    l2 = "l2"
    instr_profiling = "unsupported"
    [profiling.pmu_columns]
    PipeUtilization = ["aicore_time(us)", "total_cycles"]
    Memory = ["aicore_time(us)", "total_cycles", "ub_read_bw(GB/s)"]
    [profiling.frequencies.sys_hardware_mem_freq]
    min = 1
    max = 100
    default = 50

    [debug]
    [debug.kernel_meta]
    "0" = []
    "1" = [".o", ".json", ".cce", "_loc.json"]
    "2" = [".o", ".json", ".cce", "_loc.json"]
    "3" = [".o", ".json"]
    "4" = [".o", ".json", ".cce", "_compute.json"]
    [debug.debug_config_files]
    oom = [".o", ".json"]

    [compute]
    approximate = true
    ai_cores = 2
    vector_cores = 2
    clock_mhz = 1000
    cube_tflops = {{ float16 = 10.0 }}
    vector_tflops = {{ float16 = 1.0, float32 = 0.5 }}
    memory_bandwidth_gbps = 100.0
    aicpu_gflops = 1.0
    launch_overhead_us = 1.0

    [ops.default]
    op_class = "vector"
    aicore_dtypes = ["float16", "float32"]
    aicpu_dtypes = ["float32", "float64"]

    [ops.MatMulV2]
    op_class = "matrix"
    aicore_dtypes = ["float16"]
    aicpu_dtypes = ["float32"]
    precision_reduce = true

    [ops.SoftmaxV2]
    op_class = "vector"
    aicore_dtypes = ["float16", "float32"]
    aicpu_dtypes = ["float32"]
    impl_modes = ["high_precision", "high_performance"]
''')


def minimal_toml(name: str = "test_card", socs: tuple[str, ...] = ("TestSoC1",)) -> str:
    """A valid schema-1 declaration of product ``name``."""
    return MINIMAL_TOML.format(name=name, socs=", ".join(f'"{s}"' for s in socs))


def hooks_source(package: str, *, api: object = 1, body: str | None = None) -> str:
    """A plugin hooks module declaring ``{package}/capabilities.toml``."""
    body = body if body is not None else textwrap.dedent(f'''
        @hookimpl
        def geplug_capabilities():
            return [declare(files("{package}") / "capabilities.toml")]
    ''')
    return textwrap.dedent(f'''
        from importlib.resources import files
        from geplug import hookimpl
        from geplug.products import declare
        GEPLUG_PLUGIN_API = {api!r}
    ''') + body


def card_files(package: str, toml: str, *, api: object = 1, body: str | None = None,
               hooks: str | None = None) -> dict[str, str]:
    """The source files of a product plugin package ``package``."""
    return {
        f"{package}/__init__.py": "",
        f"{package}/hooks.py": hooks if hooks is not None else hooks_source(
            package, api=api, body=body),
        f"{package}/capabilities.toml": toml,
    }


def declaring_plugin(*paths: object) -> types.SimpleNamespace:
    """A plugin object (for ``PluginManager.register``) declaring the ``capabilities.toml``
    files at ``paths``; no package or distribution needed."""
    from geplug import hookimpl
    from geplug.products import Declaration, declare

    @hookimpl
    def geplug_capabilities() -> list[Declaration]:
        return [declare(p) for p in paths]

    return types.SimpleNamespace(GEPLUG_PLUGIN_API=1, geplug_capabilities=geplug_capabilities)
