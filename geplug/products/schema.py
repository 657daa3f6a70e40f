"""Frozen records of a product declaration (``capabilities.toml``, schema version 1).

Every product difference geplug knows lives in these records; the core and the simulator only
interpret them. The field meanings follow ``docs/reference/options.md`` §13 and
``formats.md`` §5-6; ``docs/capabilities.md`` is the reference for plugin authors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from geplug import vocab

__all__ = [
    "SCHEMA_VERSION",
    "ComputeModel",
    "DebugCaps",
    "DumpCaps",
    "FrequencyRange",
    "GraphCaps",
    "ImplModeCaps",
    "MemoryCaps",
    "OpSupport",
    "PrecisionCaps",
    "Product",
    "ProfilingCaps",
    "RuntimeCaps",
    "TopologyCaps",
]

SCHEMA_VERSION = 1
"""The ``schema_version`` this core reads."""

DTYPES = (
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "hifloat8",
)
"""Dtype names used in declarations (numpy spellings; ``bfloat16`` via ml_dtypes)."""


def _tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value)


def _modes_by_dtype(value: Mapping[str, Any]) -> Mapping[str, tuple[str, ...]]:
    from types import MappingProxyType

    return MappingProxyType({str(k): tuple(v) for k, v in value.items()})


def _frozen_map(value: Mapping[str, Any]) -> Mapping[str, Any]:
    from types import MappingProxyType

    return MappingProxyType(dict(value))


@attrs.frozen(kw_only=True)
class OpSupport:
    """One Ascend op type: where it runs, in which dtypes, with which implementation modes.

    ``op_class`` is ``matrix`` (cube unit) or ``vector``, the split the seed's precision text
    uses. ``precision_reduce`` is the mixed-precision list membership of options.md §5.5:
    ``True`` white (may be lowered), ``False`` black (kept), ``None`` grey (follows the
    previous op). ``impl_modes`` lists the implementation modes the op has
    (``all_ops_impl_mode.ini``); an op with one mode always runs that one.
    ``impl_modes_by_dtype`` narrows them per dtype the op computes in: the seed's modes "根据算子
    的dtype进行区分" (are told apart by the op's dtype); a dtype it does not name has every
    mode of ``impl_modes`` (:meth:`modes_for`).
    """

    op_type: str
    op_class: str = attrs.field(validator=attrs.validators.in_(("matrix", "vector")))
    aicore_dtypes: tuple[str, ...] = attrs.field(converter=_tuple)
    aicpu_dtypes: tuple[str, ...] = attrs.field(converter=_tuple)
    impl_modes: tuple[str, ...] = attrs.field(converter=_tuple, default=())
    impl_modes_by_dtype: Mapping[str, tuple[str, ...]] = attrs.field(
        converter=_modes_by_dtype, factory=dict)
    """dtype -> the implementation modes the op has in that dtype (a subset of
    ``impl_modes``); dtypes not named have all of ``impl_modes``."""
    precision_reduce: bool | None = None
    cube_fp16in_fp32out: bool = False
    """The AI Core kernel can take float16 inputs and write float32 outputs (force_fp32 chain)."""

    def modes_for(self, dtype: str) -> tuple[str, ...]:
        """The implementation modes of this op when it computes in ``dtype`` ("" = any)."""
        if dtype and dtype in self.impl_modes_by_dtype:
            return tuple(self.impl_modes_by_dtype[dtype])
        return self.impl_modes


@attrs.frozen(kw_only=True)
class PrecisionCaps:
    """Precision modes (options.md §5): which are accepted, defaults per run mode."""

    modes: tuple[str, ...] = attrs.field(converter=_tuple)
    """precision_mode (v1) values accepted on this product by sessions (TF/GE)."""
    modes_v2: tuple[str, ...] = attrs.field(converter=_tuple)
    """precision_mode_v2 values accepted by sessions."""
    atc_only_modes: tuple[str, ...] = attrs.field(converter=_tuple, default=())
    """Values (v1 or v2) accepted only by ATC (e.g. bf16 on 310b, hif8 on 950)."""
    default_training: str = ""
    """v1 default with graph_run_mode 1; "" when the product has no training."""
    default_training_v2: str = ""
    default_inference: str = "force_fp16"
    default_inference_v2: str = "fp16"
    torch_default: str = ""
    """torch_npu ACL_PRECISION_MODE default."""


@attrs.frozen(kw_only=True)
class ImplModeCaps:
    """Implementation modes (options.md §9): the built-in ini lists, as product data."""

    select_values: tuple[str, ...] = attrs.field(converter=_tuple)
    """op_select_implmode values accepted by sessions and ATC."""
    ini_values: tuple[str, ...] = attrs.field(converter=_tuple)
    """Values accepted in op_precision_mode ini files on this product."""
    optypelist_allowed: tuple[str, ...] = attrs.field(converter=_tuple)
    """Op types optypelist_for_implmode may name (the seed: Pooling, SoftmaxV2, LRN, ROIAlign)."""
    builtin_lists: Mapping[str, Mapping[str, str]] = attrs.field(converter=_frozen_map)
    """Built-in ini contents: file stem (``high_precision``, ``high_performance_for_all``...)
    -> {op type: mode}."""
    default_mode: str = "high_performance"


@attrs.frozen(kw_only=True)
class DumpCaps:
    """Dump behaviour (options.md §4, formats.md §2-4)."""

    debug_modes: tuple[str, ...] = attrs.field(converter=_tuple)
    """dump_debug_mode values accepted (910: three; 910b/a3/950: ``all`` only; () = n/a)."""
    overflow_mode: str = "inf_nan"
    """What an overflow looks like by default: ``inf_nan`` or ``saturation`` (fp16 ±65504)."""
    ffts_plus_names: bool = False
    """Dump file names carry the FFTS+ suffix (910b and later, formats.md §2.6)."""


@attrs.frozen(kw_only=True)
class FrequencyRange:
    """A profiling sampling-frequency option: accepted [min, max] Hz and the default."""

    min: int
    max: int
    default: int | None = None
    item_max: Mapping[str, int] = attrs.field(converter=_frozen_map, factory=dict)
    """Per collected item maxima that differ from ``max`` (950: qos/soc up to 10000)."""


@attrs.frozen(kw_only=True)
class ProfilingCaps:
    """Profiling behaviour (options.md §3.3, §13.2; formats.md §6)."""

    aic_metrics: tuple[str, ...] = attrs.field(converter=_tuple)
    aic_metrics_default: str
    aic_metrics_aliases: Mapping[str, str] = attrs.field(converter=_frozen_map, factory=dict)
    """Accepted extra names mapped onto a group (910b: PipeUtilizationExct -> PipeUtilization)."""
    pmu_columns: Mapping[str, tuple[str, ...]] = attrs.field(converter=_frozen_map)
    """aic_metrics group -> the exact PMU column block of op_summary, in order."""
    split_cores: bool
    """AI Core and AI Vector counted separately (``aic_``/``aiv_`` column prefixes)."""
    l2: str
    """What ``l2: on`` collects: ``l2`` (hit rate) or ``l2_tlb`` (L2 and TLB hit rate)."""
    instr_profiling: str = attrs.field(
        validator=attrs.validators.in_(vocab.INSTR_PROFILING_STYLES)
    )
    instr_profiling_exclusions: tuple[str, ...] = attrs.field(converter=_tuple, default=())
    """profiling_options keys ``instr_profiling_freq`` cannot be combined with (style
    ``frequency`` only; options.md §3.3, R22)."""
    frequencies: Mapping[str, FrequencyRange] = attrs.field(converter=_frozen_map)
    """Option name (sys_hardware_mem_freq, ...) -> range. Absent = unsupported here."""
    sys_io_targets: tuple[str, ...] = attrs.field(converter=_tuple, default=())
    interconnect_targets: tuple[str, ...] = attrs.field(converter=_tuple, default=())
    host_sys: tuple[str, ...] = attrs.field(converter=_tuple, default=("cpu", "mem"))
    training_trace: bool = True
    """Iteration trace supported (products with training)."""
    mix_aic_large_matmul: bool = False
    """A large, badly aligned MatMul is reported as MIX_AIC (910b/a3)."""
    pmu_na_metrics: tuple[str, ...] = attrs.field(converter=_tuple, default=())
    """Glob patterns on base metric names (no ``aic_``/``aiv_`` prefix, no unit) whose PMU
    columns exist but always hold ``N/A`` on this product (formats.md §6.5: 310b reports many
    vec / ub / bank columns as N/A)."""


@attrs.frozen(kw_only=True)
class DebugCaps:
    """Operator compile debug files (options.md §7, formats.md §5)."""

    kernel_meta: Mapping[str, tuple[str, ...]] = attrs.field(converter=_frozen_map)
    """op_debug_level ("0".."4") -> kept file suffixes (".o", ".json", ".cce", "_loc.json",
    "_compute.json")."""
    debug_config_files: Mapping[str, tuple[str, ...]] = attrs.field(converter=_frozen_map)
    """op_debug_config item -> kept file suffixes."""
    ub_fusion: bool = True


@attrs.frozen(kw_only=True)
class RuntimeCaps:
    """initialize_system, run modes and collective communication (options.md §15)."""

    initialize_system: bool
    training: bool
    """graph_run_mode 1 (training) is available."""
    rank_table_versions: tuple[str, ...] = attrs.field(converter=_tuple, default=())
    rank_queries: bool = True
    dies_per_device: int = 1


@attrs.frozen(kw_only=True)
class ComputeModel:
    """Approximate public figures for simulated timing; never a measurement of hardware."""

    approximate: bool
    ai_cores: int
    vector_cores: int
    clock_mhz: int
    cube_tflops: Mapping[str, float] = attrs.field(converter=_frozen_map)
    """dtype -> peak cube (matrix) throughput, TFLOP/s."""
    vector_tflops: Mapping[str, float] = attrs.field(converter=_frozen_map)
    """dtype -> peak vector throughput, TFLOP/s."""
    memory_bandwidth_gbps: float
    aicpu_gflops: float
    launch_overhead_us: float
    host_link_gbps: float = 25.0
    """Host <-> device copy bandwidth, GB/s (approximate; PCIe 4.0 x16 ~ 25, 5.0 x16 ~ 50)."""
    host_copy_overhead_us: float = 1.0
    """Fixed cost of one host <-> device copy, microseconds (approximate)."""
    source: str = ""
    # -- calibrated device model (geplug.device.cost; docs/device-model.md) ---------------
    cube_efficiency: Mapping[str, float] = attrs.field(converter=_frozen_map, factory=dict)
    """dtype -> achieved share of ``cube_tflops`` on a large, aligned GEMM (measured GEMM
    TFLOPS / derived peak); an absent dtype uses 1.0."""
    cube_tile: tuple[int, ...] = attrs.field(converter=_tuple, default=(16, 16, 16))
    """M, N, K of one cube fractal: every matrix dimension is padded up to it."""
    cube_block: tuple[int, ...] = attrs.field(converter=_tuple, default=(128, 256))
    """M, N of the output block one AI Core computes at a time (the split over cores)."""
    cube_k_latency: float = 0.0
    """Pipeline fill per output block, in K elements: small-K matmuls pay it relatively more."""
    vector_bandwidth_fraction: float = 1.0
    """Achieved share of ``memory_bandwidth_gbps`` of a streaming vector (elementwise) op."""
    matrix_bandwidth_fraction: float = 1.0
    """Achieved share of ``memory_bandwidth_gbps`` of a memory-bound matrix op (GEMV)."""
    vector_efficiency: float = 1.0
    """Achieved share of ``vector_tflops`` of a compute-bound vector op."""
    vector_bytes_per_core: int = 16384
    """Bytes one vector core streams before an op is split over another core."""
    transcendental_flops: float = 4.0
    """Vector instructions per element of exp/log/tanh/erf/sigmoid/sqrt (vs 1 for add)."""
    task_overhead_us: Mapping[str, float] = attrs.field(converter=_frozen_map, factory=dict)
    """Issue mode -> per-task cost, µs: ``graph`` (graph sink: the device's task scheduler
    issues the sunk task list) and ``single_op`` (each op launched from the host, eager)."""
    aicpu_task_overhead_us: float = 0.0
    """Extra fixed cost of an AI CPU task (kernel dispatch to the device's CPU cores)."""
    l2_cache_mib: float = 0.0
    """On-chip L2 cache / L2 buffer capacity, MiB. An intermediate tensor whose working set
    (producer to last consumer) fits is written and read at ``l2_bandwidth_gbps`` instead of
    memory bandwidth (:func:`geplug.device.cost.l2_resident_bytes`). 0: no L2 term, every
    tensor moves at ``memory_bandwidth_gbps``."""
    l2_bandwidth_gbps: float = 0.0
    """Achieved L2 bandwidth, GB/s (whole chip); required > 0 when ``l2_cache_mib`` > 0."""
    small_channel_needs_aipp: bool = False
    """Whether small-channel mode (C04, ``enable_small_channel``) applies only to a first
    layer fed by AIPP on this SoC (the TBE Conv2D's ``op_select_format`` turns C04 off for a
    convolution that is not the AIPP-fed first layer on such SoCs). geplug models no AIPP,
    so the simulator never uses C04 on such a product."""
    fused_attention: bool = False
    """Whether the SoC has the fused attention kernels (FlashAttentionScore and its
    gradient, CANN's op-info). Without them an attention runs as its decomposition: every
    score computed (no causal block skipping) and the score matrix written to and read from
    memory between its BatchMatMul and softmax kernels (:mod:`geplug.device.cost`)."""


def _patterns(value: Any) -> Mapping[str, tuple[tuple[str, ...], ...]]:
    from types import MappingProxyType

    return MappingProxyType({str(k): tuple(tuple(step) for step in v) for k, v in
                             dict(value).items()})


@attrs.frozen(kw_only=True)
class GraphCaps:
    """GE-style graph compilation (geplug.device.passes): what is folded, what is a no-op
    view, which fusion patterns the product's fusion engine applies."""

    shape_op_types: tuple[str, ...] = attrs.field(
        converter=_tuple, default=("Shape", "Size", "Constant", "ConstantOfShape", "Range"))
    """Op types computed at compile (on the host) when their inputs are known there."""
    view_op_types: tuple[str, ...] = attrs.field(
        converter=_tuple,
        default=("Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Dropout"))
    """Op types that only relabel a tensor's shape: no device task, the output aliases the
    input memory (GE deletes them from the executed graph)."""
    fusion: tuple[str, ...] = attrs.field(converter=_tuple, default=())
    """Names of the fusion patterns applied, from the documented default set
    (``geplug.device.patterns.DEFAULT_PATTERNS``) or ``fusion_patterns`` below."""
    fusion_patterns: Mapping[str, tuple[tuple[str, ...], ...]] = attrs.field(
        converter=_patterns, factory=dict)
    """Extra patterns: name -> chain of op-type sets (each step one set of op types; a set
    ending in ``"*"`` may repeat)."""
    five_hd_op_types: tuple[str, ...] = attrs.field(converter=_tuple, default=())
    """Op types that compute in NC1HWC0 (convolutions, pooling): their 4-D data input is
    converted to it (a TransData) when written in ND (:mod:`geplug.device.formats`)."""
    nd_op_types: tuple[str, ...] = attrs.field(converter=_tuple, default=())
    """Op types that accept only ND (Transpose, Pad on the 310P): a 5HD input is converted."""
    channel_aligned_op_types: tuple[str, ...] = attrs.field(converter=_tuple, default=())
    """Op types (Concat, Split) that keep NC1HWC0 on the channel axis only when every channel
    count is a multiple of C0; ND otherwise. All three empty: no format conversions."""
    aicpu_format_agnostic_op_types: tuple[str, ...] = attrs.field(converter=_tuple,
                                                                  default=())
    """Op types whose AI CPU kernels take a tensor in any format (``formatAgnostic`` in the
    AI CPU op-info of every kernel library that has the op): on AI CPU they follow their
    input's format like any format-agnostic op. Every other op placed on AI CPU reads and
    writes plain formats, so a 5HD tensor it reads is converted first. Used only when the
    product declares formats (the three lists above)."""


@attrs.frozen(kw_only=True)
class MemoryCaps:
    """Device memory (HBM) per SoC variant and GE's static memory plan rules."""

    hbm_gib: Mapping[str, float] = attrs.field(converter=_frozen_map, factory=dict)
    """SoC version -> HBM (or DDR) capacity, GiB."""
    usable_gib: Mapping[str, float] = attrs.field(converter=_frozen_map, factory=dict)
    """SoC version -> the device memory a program can allocate, GiB: the HBM less what the
    driver and the device's own OS hold (what torch_npu's allocator reports as "total
    capacity"). A SoC not listed can use its whole ``hbm_gib``."""
    alignment_bytes: int = 512
    """Every planned tensor block is rounded up to this many bytes."""
    system_workspace_bytes: int = 0
    """Workspace reserved once per model for the kernels' system workspace."""
    source: str = ""


@attrs.frozen(kw_only=True)
class TopologyCaps:
    """A server and its links, for the HCCL model (``geplug.hccl``; docs/distributed.md).

    Link names are the transport types of msprof's communication files (HCCS, PCIE, RDMA,
    SIO; a unified-bus link is reported as HCCS). Bandwidths are GB/s in one direction per
    link; latencies are the fixed cost of one algorithm step on that link.
    """

    devices_per_server: int
    """Ranks (devices, or dies where a package holds two) in one server."""
    intra_link: str
    """Link between ranks of one server: HCCS, PCIE or SIO."""
    intra_layout: str
    """``full_mesh`` (a dedicated link per peer), ``groups`` (full mesh inside groups of
    ``intra_group_size``, ``cross_group_link`` between groups), ``switch`` (one switch port
    per rank, shared by that rank's flows) or ``shared`` (one bus per server that every flow
    shares)."""
    intra_gbps: float
    """Per peer link (full_mesh, groups), per rank port (switch) or the whole bus (shared),
    GB/s."""
    intra_latency_us: float
    intra_group_size: int = 0
    cross_group_link: str = "PCIE"
    cross_group_gbps: float = 0.0
    """The link between groups, shared by every cross-group flow of the server."""
    dies_per_package: int = 1
    """Ranks per package joined by ``die_link`` (A3: two dies over SIO)."""
    die_link: str = "SIO"
    die_gbps: float = 0.0
    nic_link: str = "RDMA"
    nic_gbps: float
    """One NIC per device (RoCE), GB/s each way, between servers."""
    nic_latency_us: float
    supernode_devices: int = 0
    """Ranks in one super-node reachable over ``intra_link`` at ``supernode_gbps`` (0: none;
    servers then talk over their NICs)."""
    supernode_gbps: float = 0.0
    exec_timeout_step_s: int = 0
    """HCCL_EXEC_TIMEOUT is rounded down to a multiple of this (68 on the training and
    inference series, CANN env reference); 0: used as given."""
    collective_efficiency: float = 1.0
    """Share of a link's bandwidth a multi-step collective achieves (calibrated; a single
    send/recv copy uses the whole link)."""
    source: str = ""


@attrs.frozen(kw_only=True)
class Product:
    """One product family (or a card that ``extends`` one), as its plugin declares it."""

    name: str
    display_name: str
    family_id: str
    soc_versions: tuple[str, ...] = attrs.field(converter=_tuple)
    extends: str = ""
    description: str = ""
    runtime: RuntimeCaps
    precision: PrecisionCaps
    implmode: ImplModeCaps
    dump: DumpCaps
    profiling: ProfilingCaps
    debug: DebugCaps
    ops: Mapping[str, OpSupport] = attrs.field(converter=_frozen_map)
    default_op: OpSupport
    """Used for any op type the table does not list, so every ONNX operator can be simulated."""
    compute: ComputeModel
    graph: GraphCaps = attrs.field(factory=GraphCaps)
    memory: MemoryCaps = attrs.field(factory=MemoryCaps)

    topology: TopologyCaps | None = None
    """Server and links for collectives; ``None`` when the declaration has no [topology]."""
    source_path: str = ""
    distribution: str = ""
    """Filled by the plugin manager: the distribution (and version) that declared it."""

    def op(self, op_type: str) -> OpSupport:
        """The support entry of ``op_type`` (the documented default entry when unlisted)."""
        found = self.ops.get(op_type)
        if found is not None:
            return found
        return attrs.evolve(self.default_op, op_type=op_type)

    def supports(self, capability: str, value: Any = True) -> bool:
        """Whether this product supports ``value`` of the dotted ``capability`` path.

        Examples: ``supports("runtime.initialize_system")``,
        ``supports("profiling.aic_metrics", "MemoryAccess")``,
        ``supports("precision.modes", "allow_fp32_to_bf16")``. A collection capability is
        supported when it contains ``value``; a scalar when it equals ``value``.
        """
        from geplug.products.query import capability_value

        current = capability_value(self, capability)
        if isinstance(current, (tuple, list, frozenset, set)) or isinstance(current, Mapping):
            return value in current
        return bool(current == value)
