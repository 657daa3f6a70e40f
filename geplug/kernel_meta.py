"""``kernel_meta`` files (options.md §7, formats.md §5): honest simulations, written atomically.

Which files an op gets is product data: ``debug.kernel_meta[op_debug_level]`` plus
``debug.debug_config_files[item]`` for each op_debug_config item (restricted to
``op_debug_list`` when given). The contents are simulations, marked ``"simulated": true``:
the ``.o`` is a small deterministic blob (not a device binary), the ``.json`` describes the
kernel with the real field names (kernelName, opType, dtypes, shapes, implMode, blockDim,
sha256 of the ``.o``, binFileName, ...), the ``.cce`` is readable pseudo-source, ``_loc.json``
maps its lines, ``{kernel}_compute.json`` describes the (single-op) UB fusion.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from geplug.atomic import create_temp
from geplug.config.resolved import ResolvedConfig
from geplug.precision import OpDecision
from geplug.products.schema import Product

if TYPE_CHECKING:
    from geplug.device.formats import Conversion

__all__ = ["COMM_FUSED_OPS", "KernelSpec", "conversion_spec", "kernel_suffixes",
           "write_kernel_meta"]

COMM_FUSED_OPS = frozenset({
    "MatMulAllReduce", "MatMulAllReduceAddRmsNorm", "AllGatherMatMul", "MatMulReduceScatter",
    "AlltoAllAllGatherBatchMatMul", "BatchMatMulReduceScatterAlltoAll",
})
"""Compute-communication fused ops: no .o/.json/.cce (options.md §7.1)."""


@attrs.frozen(kw_only=True)
class KernelSpec:
    """What a kernel description needs to know about one compiled op."""

    decision: OpDecision
    input_shapes: tuple[tuple[int | None, ...] | None, ...]
    input_dtypes: tuple[str, ...]
    output_shapes: tuple[tuple[int | None, ...] | None, ...]
    output_dtypes: tuple[str, ...]
    block_dim: int


def conversion_spec(conv: Conversion, decision: OpDecision, block_dim: int) -> KernelSpec:
    """The kernel of a format conversion (TransData, :mod:`geplug.device.formats`): the
    tensor in its source layout in, in its target layout out (a 5HD side as
    ``(N, C1, H, W, C0)``)."""
    return KernelSpec(decision=decision, input_shapes=(conv.shape_in(conv.source),),
                      input_dtypes=(conv.dtype,), output_shapes=(conv.shape_in(conv.target),),
                      output_dtypes=(conv.dtype,), block_dim=block_dim)


def _selected(node: str, op_type: str, entries: Sequence[str]) -> bool:
    if not entries:
        return True
    for entry in entries:
        low = entry.lower()
        if low.startswith("optype::"):
            if entry.split("::", 1)[1] == op_type:
                return True
        elif entry == node:
            return True
    return False


def kernel_suffixes(product: Product, config: ResolvedConfig, node: str,
                    op_type: str) -> tuple[str, ...]:
    """The kernel_meta file suffixes ``node`` gets (empty: no files)."""
    if config.kernel_meta_dir is None or op_type in COMM_FUSED_OPS:
        return ()
    level = config.config.op_debug_level or 0
    suffixes = list(product.debug.kernel_meta.get(str(level), ()))
    if config.op_debug_items and _selected(node, op_type, config.op_debug_list):
        for item in config.op_debug_items:
            suffixes.extend(product.debug.debug_config_files.get(item, ()))
    if not product.debug.ub_fusion:
        suffixes = [s for s in suffixes if s != "_compute.json"]
    return tuple(dict.fromkeys(suffixes))


def _dims(shape: Sequence[int | None] | None) -> list[int]:
    return [int(d) if d is not None else -1 for d in (shape or ())]


def kernel_name(spec: KernelSpec) -> str:
    """A deterministic kernel name: op type plus a digest of dtypes, shapes and impl mode."""
    d = spec.decision
    key = json.dumps([d.op_type, d.dtype, d.output_dtype, d.impl_mode,
                      [_dims(s) for s in spec.input_shapes], list(spec.input_dtypes)])
    return f"te_{d.op_type.lower()}_{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = create_temp(str(path.parent), path.name)  # sweeps dead writers' leftovers
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _binary(name: str, spec: KernelSpec, debug: bool) -> bytes:
    head = b"GEPLUG-SIMULATED-KERNEL\x00" + name.encode() + b"\x00"
    body = hashlib.sha512(name.encode() + spec.decision.dtype.encode()).digest() * 4
    if debug:  # ccec -O0 -g: larger, with a debug section
        body += b"\x00.debug_info\x00" + hashlib.sha512(name.encode()).digest() * 16
    return head + body


def _cce(name: str, spec: KernelSpec, generator: str) -> str:
    d = spec.decision
    return "\n".join([
        f"// {name}.cce - SIMULATED by {generator}; not real TBE output",
        f"// op {d.node} ({d.op_type}), dtype {d.dtype}, impl_mode {d.impl_mode or 'n/a'}",
        f'extern "C" __global__ __aicore__ void {name}(__gm__ uint8_t* args) {{',
        f"  // block_dim = {spec.block_dim}",
        "  copy_gm_to_ubuf(...);   // load inputs",
        f"  {d.op_type.lower()}_compute_{d.dtype or 'any'}(...);",
        "  copy_ubuf_to_gm(...);   // store outputs",
        "}",
        "",
    ])


def write_kernel_meta(
    product: Product, config: ResolvedConfig, specs: Iterable[KernelSpec], *,
    generator: str = "geplug-simulator",
) -> list[str]:
    """Write the kernel_meta files of ``specs``; returns the paths written (sorted).

    Backend-independent (every backend calls it at compile); ``generator`` is the backend's
    distribution name, recorded in the files so nobody mistakes them for real TBE output.
    """
    if config.kernel_meta_dir is None:
        return []
    root = Path(config.kernel_meta_dir)
    written: set[str] = set()
    level = config.config.op_debug_level or 0
    debug_build = level == 2 or bool({"ccec_O0", "ccec_g"} & set(config.op_debug_items))
    for spec in specs:
        d = spec.decision
        suffixes = kernel_suffixes(product, config, d.node, d.op_type)
        if not suffixes:
            continue
        root.mkdir(parents=True, exist_ok=True)
        name = kernel_name(spec)
        blob = _binary(name, spec, debug_build)
        files: dict[str, bytes] = {}
        if ".o" in suffixes:
            files[".o"] = blob
        if ".json" in suffixes:
            desc: dict[str, Any] = {
                "binFileName": name,
                "binFileSuffix": ".o",
                "blockDim": spec.block_dim,
                "coreType": "AiCore" if d.op_class == "matrix" else "VectorCore",
                "kernelName": f"{name}__kernel0",
                "magic": "RT_DEV_BINARY_MAGIC_ELF" if d.op_class == "matrix"
                else "RT_DEV_BINARY_MAGIC_ELF_AIVEC",
                "opType": d.op_type,
                "nodeName": d.node,
                "implMode": d.impl_mode,
                "engine": d.engine,
                "inputs": [{"dtype": d.dtype if dt == d.original_dtype else dt,
                            "shape": _dims(s)} for s, dt in
                           zip(spec.input_shapes, spec.input_dtypes, strict=False)],
                "outputs": [{"dtype": d.output_dtype if dt == d.original_dtype else dt,
                             "shape": _dims(s)} for s, dt in
                            zip(spec.output_shapes, spec.output_dtypes, strict=False)],
                "sha256": hashlib.sha256(blob).hexdigest(),
                "opParaSize": 0,
                "workspace": {"num": 0, "size": []},
                "socVersion": product.soc_versions[0] if product.soc_versions else "",
                "debugOptions": {"op_debug_level": level,
                                 "op_debug_config": list(config.op_debug_items)},
                "simulated": True,
                "generator": generator,
            }
            files[".json"] = (json.dumps(desc, indent=2) + "\n").encode()
        cce = _cce(name, spec, generator)
        if ".cce" in suffixes:
            files[".cce"] = cce.encode()
        if "_loc.json" in suffixes:
            loc = {"kernelName": name, "cceFile": f"{name}.cce", "simulated": True,
                   "map": [{"cce_line": i + 1, "py_file": f"{d.op_type.lower()}.py",
                            "py_line": 10 + i} for i in range(len(cce.splitlines()))]}
            files["_loc.json"] = (json.dumps(loc, indent=2) + "\n").encode()
        if "_compute.json" in suffixes:
            comp = {"kernelName": name, "simulated": True, "fusion_op_name": name,
                    "op_list": [{"name": d.node, "type": d.op_type, "pattern": "Opaque",
                                 "output_dtype": d.output_dtype}]}
            files["_compute.json"] = (json.dumps(comp, indent=2) + "\n").encode()
        for suffix, data in files.items():
            path = root / f"{name}{suffix}"
            if str(path) in written:
                continue
            _atomic_write(path, data)
            written.add(str(path))
    return sorted(written)
