"""One test per sentence of the seed's precision_mode paragraph (options.md §5.4)."""

from __future__ import annotations

import pytest

from geplug.errors import CompileError
from geplug.precision import list_state, mode_from_name, select_dtype
from geplug.products.schema import OpSupport

ALL = ("float16", "bfloat16", "float32")


def op(cls: str = "matrix", aic: tuple[str, ...] = ALL, cpu: tuple[str, ...] = ("float32",),
       reduce: bool | None = None, cube: bool = False) -> OpSupport:
    return OpSupport(op_type="Op", op_class=cls, aicore_dtypes=aic, aicpu_dtypes=cpu,
                     precision_reduce=reduce, cube_fp16in_fp32out=cube)


def pick(mode: str, support: OpSupport, orig: str, v2: bool = False, **kw: object) -> tuple:
    sel = select_dtype(support, mode_from_name(mode, v2=v2), orig, node="n", product="p",
                       **kw)  # type: ignore[arg-type]
    return sel.engine, sel.dtype


def test_allow_fp32_to_fp16_matrix_float32_chain():
    """对于矩阵类算子：如果原图中算子精度为float32，优先降低精度到float16，如果AI Core中算子不支持
    float16，则继续选择float32，如果AI Core中算子不支持float32，则使用AI CPU算子进行计算；如果
    AI CPU算子也不支持，则执行报错。"""
    m = "allow_fp32_to_fp16"
    assert pick(m, op(), "float32") == ("AI_CORE", "float16")
    assert pick(m, op(aic=("float32",)), "float32") == ("AI_CORE", "float32")
    assert pick(m, op(aic=("int8",)), "float32") == ("AI_CPU", "float32")
    with pytest.raises(CompileError, match="'n'"):
        pick(m, op(aic=("int8",), cpu=()), "float32")


def test_allow_fp32_to_fp16_matrix_bfloat16_chain():
    """如果原图中算子精度为bfloat16，则优先使用原图精度bfloat16，如果AI Core中算子不支持bfloat16，
    则选择float32，如果AI Core中算子不支持float32，则直接降低精度到float16；如果AI Core中算子不支持
    float16，则使用AI CPU算子进行计算；如果AI CPU算子也不支持，则执行报错。"""
    m = "allow_fp32_to_fp16"
    assert pick(m, op(), "bfloat16") == ("AI_CORE", "bfloat16")
    assert pick(m, op(aic=("float32", "float16")), "bfloat16") == ("AI_CORE", "float32")
    assert pick(m, op(aic=("float16",)), "bfloat16") == ("AI_CORE", "float16")
    assert pick(m, op(aic=(), cpu=("bfloat16",)), "bfloat16") == ("AI_CPU", "bfloat16")
    with pytest.raises(CompileError):
        pick(m, op(aic=(), cpu=()), "bfloat16")


def test_allow_fp32_to_fp16_vector_float32_keeps_original_first():
    """对于矢量类算子，优先保持原图精度：如果原图中算子精度为float32，则优先使用原图精度float32，
    如果AI Core中算子不支持float32，则直接降低精度到float16；如果AI Core中算子不支持float16，则使用
    AI CPU算子进行计算；如果AI CPU算子也不支持，则执行报错。"""
    m = "allow_fp32_to_fp16"
    assert pick(m, op("vector"), "float32") == ("AI_CORE", "float32")
    assert pick(m, op("vector", aic=("float16",)), "float32") == ("AI_CORE", "float16")
    assert pick(m, op("vector", aic=("int32",)), "float32") == ("AI_CPU", "float32")
    with pytest.raises(CompileError):
        pick(m, op("vector", aic=("int32",), cpu=()), "float32")


def test_allow_fp32_to_fp16_vector_bfloat16_chain():
    """（矢量类）如果原图中算子精度为bfloat16，则优先使用原图精度bfloat16，如果AI Core中算子不支持
    bfloat16，则选择float32，如果AI Core中算子不支持float32，则直接降低精度到float16；……"""
    m = "allow_fp32_to_fp16"
    assert pick(m, op("vector"), "bfloat16") == ("AI_CORE", "bfloat16")
    assert pick(m, op("vector", aic=("float32", "float16")), "bfloat16") == ("AI_CORE", "float32")
    assert pick(m, op("vector", aic=("float16",)), "bfloat16") == ("AI_CORE", "float16")


def test_force_fp16_applies_to_ops_supporting_all_three_dtypes():
    """force_fp16：算子同时支持float16、bfloat16和float32数据类型时，强制选择float16数据类型。"""
    assert pick("force_fp16", op("vector"), "float32") == ("AI_CORE", "float16")
    assert pick("force_fp16", op("vector", aic=("float16", "float32")), "float32") == (
        "AI_CORE", "float32")


def test_force_fp16_lowers_a_float16_only_cube_to_float16():
    """A family without bfloat16 (the training series' cube takes float16 only) still gets
    float16 under force_fp16, its inference default (inferred; documented in simulator.md)."""
    assert pick("force_fp16", op(aic=("float16", "int8")), "float32") == ("AI_CORE", "float16")
    assert pick("force_fp16", op(aic=("int8",)), "float32") == ("AI_CPU", "float32")


def test_force_fp16_on_a_family_without_bfloat16_forces_ops_having_its_float_dtypes():
    """On a product with no bfloat16 anywhere (the inference series, whose default is
    force_fp16) "supports float16, bfloat16 and float32" means every float dtype it has."""
    vector = op("vector", aic=("float16", "float32"))
    assert pick("force_fp16", vector, "float32") == ("AI_CORE", "float32")  # literal rule
    assert pick("force_fp16", vector, "float32",
                product_floats=("float16", "float32")) == ("AI_CORE", "float16")


def test_force_fp16_is_for_online_inference_only():
    """此参数仅适用于在线推理场景。(checked by the configuration rules, R12)"""
    from geplug.config import check
    from geplug.config.model import SessionConfig
    from geplug.testing.plugin import require_product

    a2 = require_product("atlas_a2")
    training = check(SessionConfig(precision_mode="force_fp16", graph_run_mode=1), a2)
    inference = check(SessionConfig(precision_mode="force_fp16", graph_run_mode=0), a2)
    assert any(p.option == "precision_mode" and p.severity == "error" for p in training)
    assert not any(p.option == "precision_mode" and p.severity == "error" for p in inference)


def test_v2_fp16_forces_float16_without_the_three_dtype_condition():
    """v2 fp16: ops whose original dtype is fp16, bf16 or fp32 are forced to fp16."""
    assert pick("fp16", op("vector", aic=("float16", "float32")), "float32", v2=True) == (
        "AI_CORE", "float16")


def test_force_fp32_and_cube_fp16in_fp32out_are_the_same():
    """配置为force_fp32或cube_fp16in_fp32out，效果等同。"""
    assert mode_from_name("force_fp32").rule == mode_from_name("cube_fp16in_fp32out").rule
    assert mode_from_name("cube_fp16in_fp32out", v2=True).rule == "force_fp32"


def test_force_fp32_matrix_chain():
    """对于矩阵计算类算子，系统内部会按算子实现的支持情况处理：
    1. 优先选择输入数据类型为float16且输出数据类型为float32；2. 如果1中的场景不支持，则选择输入
    数据类型为float32且输出数据类型为float32；3. 如果2中的场景不支持，则选择输入数据类型为float16且
    输出数据类型为float16；4. 如果3中的场景不支持，则报错。"""
    m = mode_from_name("force_fp32")
    first = select_dtype(op(cube=True), m, "float32")
    assert (first.dtype, first.out_dtype) == ("float16", "float32")
    second = select_dtype(op(cube=False), m, "float32")
    assert (second.dtype, second.out_dtype) == ("float32", "float32")
    third = select_dtype(op(aic=("float16",)), m, "float32")
    assert (third.dtype, third.out_dtype) == ("float16", "float16")
    with pytest.raises(CompileError):
        select_dtype(op(aic=("int8",)), m, "float32", node="mm")


def test_force_fp32_vector_forces_float32_for_reduced_originals():
    """对于矢量计算类算子，表示原图中算子精度为float16或bfloat16，强制选择float32。"""
    assert pick("force_fp32", op("vector"), "float16") == ("AI_CORE", "float32")
    assert pick("force_fp32", op("vector"), "bfloat16") == ("AI_CORE", "float32")


def test_force_fp32_without_aicore_float32_keeps_the_supported_float16():
    """如果原图中存在部分算子，在AI Core中该算子的实现不支持float32，比如某算子仅支持float16类型，
    则该参数不生效，仍然使用支持的float16。"""
    assert pick("force_fp32", op("vector", aic=("float16",)), "float16") == ("AI_CORE", "float16")


def test_force_fp32_black_listed_without_aicore_float32_uses_aicpu_float32():
    """如果在AI Core中该算子的实现不支持float32，且又配置了黑名单（precision_reduce = false），
    则会使用float32的AI CPU算子；如果AI CPU算子也不支持，则执行报错。"""
    black = op("vector", aic=("float16",), reduce=False)
    state = list_state("Op", black.precision_reduce)
    assert pick("force_fp32", black, "float16", mix_state=state) == ("AI_CPU", "float32")
    nocpu = op("vector", aic=("float16",), cpu=(), reduce=False)
    with pytest.raises(CompileError):
        pick("force_fp32", nocpu, "float16", mix_state=state)


def test_must_keep_origin_dtype_keeps_the_original():
    """must_keep_origin_dtype：保持原图精度。"""
    for orig in ("float16", "float32"):
        assert pick("must_keep_origin_dtype", op(), orig) == ("AI_CORE", orig)


def test_must_keep_fp16_without_aicore_fp16_uses_float32():
    """如果原图中某算子精度为float16，AI Core中该算子的实现不支持float16、仅支持float32和bfloat16，
    则系统内部会自动采用高精度float32。"""
    assert pick("must_keep_origin_dtype", op(aic=("float32", "bfloat16")), "float16") == (
        "AI_CORE", "float32")


def test_must_keep_fp16_with_only_bf16_uses_aicpu_float16():
    """如果原图中某算子精度为float16，AI Core中该算子的实现不支持float16、仅支持bfloat16，则会使用
    float16的AI CPU算子；如果AI CPU算子也不支持，则执行报错。"""
    assert pick("must_keep_origin_dtype", op(aic=("bfloat16",), cpu=("float16",)),
                "float16") == ("AI_CPU", "float16")
    with pytest.raises(CompileError):
        pick("must_keep_origin_dtype", op(aic=("bfloat16",), cpu=("float32",)), "float16")


def test_must_keep_fp32_with_only_fp16_uses_aicpu_float32():
    """如果原图中某算子精度为float32，AI Core中该算子的实现不支持float32类型、仅支持float16类型，
    则会使用float32的AI CPU算子；如果AI CPU算子也不支持，则执行报错。"""
    assert pick("must_keep_origin_dtype", op(aic=("float16",)), "float32") == (
        "AI_CPU", "float32")
    with pytest.raises(CompileError, match="tried AI Core float32, AI CPU float32"):
        pick("must_keep_origin_dtype", op(aic=("float16",), cpu=()), "float32")


def test_allow_mix_precision_and_fp16_are_the_same():
    """配置为allow_mix_precision或allow_mix_precision_fp16，效果等同。"""
    assert mode_from_name("allow_mix_precision").rule == \
        mode_from_name("allow_mix_precision_fp16").rule


def test_mix_precision_fp16_lowers_some_fp32_and_bf16_ops():
    """针对原始模型中float32和bfloat16数据类型的算子，按照内置的优化策略，自动将部分float32和
    bfloat16的算子降低精度到float16。"""
    m = "allow_mix_precision"
    assert pick(m, op(), "float32", mix_state="white") == ("AI_CORE", "float16")
    assert pick(m, op(), "bfloat16", mix_state="white") == ("AI_CORE", "float16")
    assert pick(m, op(), "float32", mix_state="black") == ("AI_CORE", "float32")
    assert pick(m, op(), "float32", mix_state="grey", prev_lowered=True) == ("AI_CORE", "float16")
    assert pick(m, op(), "float32", mix_state="grey", prev_lowered=False) == (
        "AI_CORE", "float32")


def test_mix_precision_bf16_lowers_some_fp32_ops_else_aicpu():
    """表示使用混合精度bfloat16和float32数据类型来处理神经网络的过程。针对原始模型中float32数据类型的算子，按照内置的优化策略，自动将部分float32的算子降低精度到
    bfloat16……如果AI Core中算子不支持bfloat16和float32，则使用AI CPU算子进行计算；如果AI CPU算子
    也不支持，则执行报错。"""
    m = "allow_mix_precision_bf16"
    assert pick(m, op(), "float32", mix_state="white") == ("AI_CORE", "bfloat16")
    assert pick(m, op(), "float32", mix_state="black") == ("AI_CORE", "float32")
    assert pick(m, op(aic=("float16",)), "float32", mix_state="white") == ("AI_CPU", "float32")
    with pytest.raises(CompileError):
        pick(m, op(aic=("float16",), cpu=()), "float32", mix_state="white")


def test_bf16_modes_only_on_350_a3_a2():
    """仅Atlas 350 加速卡，Atlas A3 训练系列产品/Atlas A3 推理系列产品，Atlas A2 训练系列产品/Atlas
    A2 推理系列产品，支持此配置。"""
    from geplug.plugin import PluginManager

    products = {p.family_id: p for p in PluginManager().load().products()}
    for fid, product in products.items():
        supported = product.supports("precision.modes", "allow_mix_precision_bf16")
        assert supported == (fid in ("910b", "a3", "950")), fid


def test_allow_fp32_to_bf16_float32_chain():
    """如果原图中算子精度为float32，则优先使用原图精度float32，如果AI Core中算子不支持float32，
    则降低精度到bfloat16；如果AI Core中算子不支持bfloat16，则使用AI CPU算子进行计算；
    如果AI CPU算子也不支持，则执行报错。"""
    m = "allow_fp32_to_bf16"
    assert pick(m, op(), "float32") == ("AI_CORE", "float32")
    assert pick(m, op(aic=("bfloat16",)), "float32") == ("AI_CORE", "bfloat16")
    assert pick(m, op(aic=("float16",)), "float32") == ("AI_CPU", "float32")
    with pytest.raises(CompileError):
        pick(m, op(aic=("float16",), cpu=()), "float32")


def test_allow_fp32_to_bf16_bfloat16_chain():
    """如果原图中算子精度为bfloat16，则优先使用原图精度bfloat16，如果AI Core中算子不支持bfloat16，
    则选择float32，如果AI Core中算子不支持float32，则使用AI CPU算子进行计算；如果AI CPU算子也不
    支持，则执行报错。"""
    m = "allow_fp32_to_bf16"
    assert pick(m, op(), "bfloat16") == ("AI_CORE", "bfloat16")
    assert pick(m, op(aic=("float32",)), "bfloat16") == ("AI_CORE", "float32")
    assert pick(m, op(aic=("float16",), cpu=("bfloat16",)), "bfloat16") == ("AI_CPU", "bfloat16")


def test_product_defaults_per_seed():
    """针对Atlas 训练系列产品，默认配置项为“allow_fp32_to_fp16”。针对Atlas A2 训练系列产品/Atlas A2
    推理系列产品，默认配置项为“must_keep_origin_dtype”。"""
    from geplug.config.model import SessionConfig
    from geplug.config.resolved import ResolvedConfig
    from geplug.precision import effective_mode
    from geplug.testing.plugin import require_product

    for name, want in (("atlas_train", "allow_fp32_to_fp16"),
                       ("atlas_a2", "must_keep_origin_dtype")):
        product = require_product(name)
        cfg = ResolvedConfig(product=name, config=SessionConfig())
        assert effective_mode(cfg, product).value == want


def test_integer_ops_keep_their_dtype():
    """The text says nothing about integer ops: they keep their dtype (inferred)."""
    sel = select_dtype(op("vector", aic=("int32",)), mode_from_name("force_fp16"), "int32")
    assert (sel.engine, sel.dtype) == ("AI_CORE", "int32") and "inferred" in sel.reason


def test_product_float_dtypes_come_from_the_declaration():
    from geplug.precision.select import product_float_dtypes
    from geplug.testing.plugin import require_product

    assert product_float_dtypes(require_product("atlas_infer")) == ("float16", "float32")
