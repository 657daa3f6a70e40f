"""Device formats and the format conversions (TransData) GE inserts between them.

Convolutions and pooling compute in the five-dimensional format NC1HWC0 ("5HD": the
channels cut into C1 blocks of C0); other ops accept only the plain format ND. Where a
tensor produced in one format is read by an op that needs the other, GE inserts a
TransData that rewrites it (the ModelZoo-PyTorch 310 profiling notes name TransData
"before and after each Transpose" of ShuffleNetV1's channel shuffle among the costliest
ops; docs/device-model.md, "Format conversions"). Which op types need which format is the
product's declaration (``[graph] five_hd_op_types`` / ``nd_op_types`` /
``channel_aligned_op_types``: its SoC's op-info configuration); a product that declares
none gets no conversions. The rules:

- a **5HD op** (its data input 4-D) reads its data input in 5HD and writes 5HD;
- an **ND op** reads and writes ND, and so does an op placed on **AI CPU** unless its AI
  CPU kernel is format-agnostic (``[graph] aicpu_format_agnostic_op_types``: the AI CPU
  op-info's ``formatAgnostic``; the others declare ND/NCHW/NHWC inputs);
- a **channel-aligned op** (Concat, Split) working on the channel axis of 4-D tensors is a
  5HD op when every channel count it concatenates or splits is a multiple of C0 (16
  elements, 32 for 1-byte types: CANN's ``concat_v2_d.py`` / ``split_v_d.py``
  ``op_select_format``) or, for a 16-bit concat, its inputs are equal with 2, 4 or 8
  channels or unequal with at most 16 channels out (``concat_last_dim.py``); an ND op
  otherwise; on another axis it is format-agnostic;
- every **other op** is format-agnostic: it computes in the format of its first 4-D data
  input (its other 4-D inputs converted to it) and writes that format;
- a **5HD op's filter** (a 4-D input after its data input: a convolution's weight) is read
  in FRACTAL_Z: a filter a node computes (weight normalisation) is converted to it;
- a **view** (Reshape, Flatten, ...: no task) that changes a 4-D tensor's rank or channel
  count cannot relabel a 5HD tensor: its reader sees the tensor in ND (converted first),
  and a reader in another format converts the view, in the view's shape, from there;
- **weights and constants** are converted when the model is built (no task); **graph
  inputs** are taken in the format their first reader needs (an agnostic first reader takes
  it plain) and held so: no TransData of the input. The published rows geplug is validated
  on mostly feed through AIPP, which converts on the way in (AIPP is no option yet: the
  measurement without it is in docs/device-model.md, "Format conversions"); a backend
  whose graph declares no inputs (geplug-torch: torch_npu has no AIPP) gets its inputs
  plain and converted; graph outputs as written.

One conversion per tensor and target format (GE merges identical TransData): a task of its
own (``trans_TransData_<n>``, as GE names the nodes it inserts) that reads the source and
writes the target, the 5HD side padded to whole C0 blocks, run before the first task that
reads the converted tensor; every later reader in that format reads its output
(:func:`format_conversions`; the tasks: :func:`geplug.device.model.build_device_model`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from geplug.device.cost import _dims
from geplug.device.ir import DTYPE_BYTES, Graph, Node, numel
from geplug.products.schema import GraphCaps

__all__ = ["FIVE_HD", "FRACTAL_Z", "ND", "TRANSDATA", "Conversion", "FormatPlan", "Layout",
           "five_hd_shape", "format_conversions", "fractal_z_shape", "held_shape",
           "node_formats", "plan_formats", "reported_format"]

FIVE_HD = "NC1HWC0"
ND = "ND"
FRACTAL_Z = "FRACTAL_Z"
"""The layout of a convolution's filter on the cube (CANN 8.1.RC1 op-info: ``filter`` of
Conv2D, DepthwiseConv2D and Conv2DTranspose is ``FRACTAL_Z`` on every SoC geplug declares
formats for)."""
TRANSDATA = "TransData"
"""The op type of a format conversion task."""


@attrs.frozen
class Conversion:
    """One TransData: ``tensor`` rewritten from ``source`` to ``target`` format before
    ``consumer`` (a node, the first reader) reads it; ``bytes_moved``: read plus write."""

    tensor: str
    source: str
    target: str
    consumer: str
    bytes_moved: int
    readers: tuple[str, ...] = ()
    """Every node that reads the converted tensor (``consumer`` first)."""
    name: str = ""
    """Its task's name (``trans_TransData_<n>``; set by the device model)."""
    shape: tuple[int, ...] = ()
    """The tensor's (logical) shape."""
    dtype: str = ""
    """The dtype the tensor is held in."""
    group: int = 1
    """The groups of the convolution whose filter it is (a FRACTAL_Z target's layout)."""

    @property
    def output(self) -> str:
        """The converted tensor (the task's output): ``<name>:0``."""
        return f"{self.name}:0"

    def shape_in(self, fmt: str) -> tuple[int, ...]:
        """The tensor's shape as held in ``fmt``: 5HD ``(N, C1, H, W, C0)``, FRACTAL_Z its
        fractals (:func:`fractal_z_shape`), else logical."""
        return held_shape(fmt, self.shape, self.dtype, self.group)

    def bytes_in(self, fmt: str) -> int:
        """The tensor's bytes as held in ``fmt`` (5HD padded to whole C0 blocks)."""
        return numel(self.shape_in(fmt)) * DTYPE_BYTES.get(self.dtype, 2)

    def event_layout(self) -> dict[str, Any]:
        """Its task event's shapes and formats (``TaskEvent`` fields), each side as the
        device holds it, as the real ``ge_task_data`` shows a TransData: the 5HD side
        ``NC1HWC0`` with its 5-D shape, the plain side ``NCHW`` when 4-D (its origin
        format), else ``ND``."""
        rank = len(self.shape)
        return {"input_shapes": [self.shape_in(self.source)],
                "input_formats": [reported_format(self.source, rank)],
                "output_shapes": [self.shape_in(self.target)],
                "output_formats": [reported_format(self.target, rank)]}


def reported_format(fmt: str, rank: int) -> str:
    """How profiles name format ``fmt`` of a tensor of ``rank`` dimensions: a device format
    (``NC1HWC0``, ``FRACTAL_Z``) by its name, a plain 4-D tensor ``NCHW``, else ``ND``."""
    if fmt in (FIVE_HD, FRACTAL_Z):
        return fmt
    return "NCHW" if rank == 4 else "ND"


@attrs.frozen
class Layout:
    """How the device holds one tensor of a task: its ``format`` (``NC1HWC0``,
    ``FRACTAL_Z``) and, for a filter, its convolution's ``group`` (the fractal layout
    merges groups)."""

    format: str
    group: int = 1

    def shape(self, logical: tuple[int, ...], dtype: str) -> tuple[int, ...]:
        """``logical`` as held in this layout (``dtype``: the dtype the device holds)."""
        return held_shape(self.format, logical, dtype, self.group)


def _c0(dtype: str) -> int:
    """The channel block of a tensor stored in NC1HWC0: 16 elements, 32 for 1-byte types
    (the format's C0, which the concat/split alignment rules use; not the cube fractal's
    32-byte K block of :func:`geplug.device.cost.cube_shape`)."""
    return 32 if DTYPE_BYTES.get(dtype, 2) == 1 else 16


def five_hd_shape(shape: tuple[int, ...], dtype: str) -> tuple[int, ...]:
    """A 4-D NCHW ``shape`` as NC1HWC0 ``(N, ceil(C / C0), H, W, C0)`` (as the real stack
    reports it: ``1,3,224,224`` -> ``1,1,224,224,16``); another rank unchanged."""
    if len(shape) != 4:
        return shape
    c0 = _c0(dtype)
    n, c, h, w = shape
    return (n, -(-c // c0), h, w, c0)


def fractal_z_shape(shape: tuple[int, ...], dtype: str, group: int = 1
                    ) -> tuple[int, ...]:
    """A 4-D filter ``(N, C, H, W)`` (C the input channels per group) as FRACTAL_Z: the
    cube's weight fractals, ``(C1 * H * W, ceil(N / 16), 16, C0)`` with C1 = ceil(C / C0)
    (a 64x64 3x3 float16 filter is ``36,4,16,16``). A grouped filter merges ``enlarge``
    groups into one block-diagonal filter, ``enlarge = min(lcm(C0 / gcd(C, C0),
    16 / gcd(N / group, 16)), group)``: ``(ceil(group / enlarge) * ceil(C * enlarge / C0) *
    H * W, ceil(N / group * enlarge / 16), 16, C0)`` (GE's ``GetFractalZShape``; the same
    merge :func:`geplug.device.cost.cube_shape` costs: a 32-channel depthwise 3x3 filter is
    ``18,1,16,16``). Another rank unchanged."""
    if len(shape) != 4:
        return shape
    c0 = _c0(dtype)
    n, c, h, w = shape
    c = max(c, 1)
    if group > 1:
        cout = max(n // group, 1)
        enlarge = min(math.lcm(c0 // math.gcd(c, c0), 16 // math.gcd(cout, 16)), group)
        return (-(-group // enlarge) * -(-(c * enlarge) // c0) * h * w,
                -(-(cout * enlarge) // 16), 16, c0)
    return (-(-c // c0) * h * w, -(-n // 16), 16, c0)


def held_shape(fmt: str, shape: tuple[int, ...], dtype: str, group: int = 1
               ) -> tuple[int, ...]:
    """``shape`` (logical) as the device holds it in ``fmt`` (``group``: a filter's)."""
    if fmt == FIVE_HD:
        return five_hd_shape(shape, dtype)
    if fmt == FRACTAL_Z:
        return fractal_z_shape(shape, dtype, group)
    return shape


def _conversion(graph: Graph, name: str, source: str, target: str, consumer: str,
                dtype: str, group: int = 1) -> Conversion:
    """The conversion of tensor ``name``: it moves its size in each of the two formats."""
    conv = Conversion(name, source, target, consumer, 0, (consumer,), "",
                      _dims(graph, name), dtype, group)
    return attrs.evolve(conv, bytes_moved=conv.bytes_in(source) + conv.bytes_in(target))


def _axis(node: Node, rank: int) -> int:
    axis = int(node.attrs.get("axis", 0) or 0)
    return axis + rank if axis < 0 else axis


def _wants(node: Node, graph: Graph, caps: GraphCaps, dtypes: Mapping[str, str]) -> str:
    """The format ``node`` computes in: 5HD, ND or "" (format-agnostic); ``dtypes``: the
    dtype a tensor is held in on the device when not its graph dtype."""
    op = node.op_type
    if op in caps.nd_op_types:
        return ND
    five_hd = op in caps.five_hd_op_types
    if not five_hd and op not in caps.channel_aligned_op_types:
        return ""
    first = _dims(graph, node.inputs[0]) if node.inputs and node.inputs[0] else ()
    if five_hd:
        return FIVE_HD if len(first) == 4 else ""
    if len(first) == 4 and _axis(node, 4) == 1:
        concat = len(node.inputs) > 1 and op.startswith("Concat")
        sides = [_dims(graph, t) for t in (node.inputs if concat else node.outputs) if t]
        dtype = dtypes.get(node.inputs[0]) or _dtype(graph, node.inputs[0])
        c0 = _c0(dtype)
        if all(len(s) == 4 and s[1] % c0 == 0 for s in sides):
            return FIVE_HD
        if concat and DTYPE_BYTES.get(dtype) == 2 and sides and all(len(s) == 4 for s in sides):
            # the unaligned 16-bit 5HD concat (ConcatWith5HD.check_shape_support,
            # concat_last_dim.py): equal inputs of 2, 4 or 8 channels, or unequal inputs
            # whose output has at most 16
            same = all(s == sides[0] for s in sides)
            out = sum(s[1] for s in sides)
            if (same and sides[0][1] in (2, 4, 8)) or (not same and out <= 16):
                return FIVE_HD
        return ND
    return ""


@attrs.frozen
class FormatPlan:
    """The formats pass's result: the conversions GE inserts and the nodes that compute in
    NC1HWC0 (their 4-D tensors held so: :func:`node_formats`)."""

    conversions: tuple[Conversion, ...] = ()
    five_hd_nodes: frozenset[str] = frozenset()


def format_conversions(graph: Graph, order: Sequence[Node], caps: GraphCaps, *,
                       root: Mapping[str, str], known: frozenset[str] | set[str],
                       dtypes: Mapping[str, str], aicpu: frozenset[str] | set[str] = frozenset()
                       ) -> list[Conversion]:
    """The TransData GE inserts in ``graph`` (:func:`plan_formats`)."""
    return list(plan_formats(graph, order, caps, root=root, known=known, dtypes=dtypes,
                             aicpu=aicpu).conversions)


def plan_formats(graph: Graph, order: Sequence[Node], caps: GraphCaps, *,
                 root: Mapping[str, str], known: frozenset[str] | set[str],
                 dtypes: Mapping[str, str], aicpu: frozenset[str] | set[str] = frozenset()
                 ) -> FormatPlan:
    """The TransData GE inserts in ``graph`` (module docstring), in ``order`` (the device
    nodes in execution order), and the nodes computing in 5HD; ``root``: a view's output ->
    the tensor it relabels; ``known``: weights and constants; ``dtypes``: the dtype each
    tensor is held in on the device when it differs from the graph's; ``aicpu``: the
    nodes placed on AI CPU, which read and write ND unless their op type is in
    ``caps.aicpu_format_agnostic_op_types``. Empty when the product declares no formats."""
    if not (caps.five_hd_op_types or caps.nd_op_types or caps.channel_aligned_op_types):
        return FormatPlan()
    may_be_5hd = frozenset((*caps.five_hd_op_types, *caps.channel_aligned_op_types))
    if not any(n.op_type in may_be_5hd for n in order):
        return FormatPlan()  # no op computes in 5HD: every tensor stays ND, nothing to convert
    held: dict[str, str] = {}  # tensor (a root) -> the format it was written in
    done: dict[tuple[str, str], int] = {}  # (tensor, target) -> its conversion in ``out``
    readers: list[list[str]] = []  # per conversion, the nodes reading its output
    out: list[Conversion] = []
    five_hd_nodes: list[str] = []
    inputs = set(graph.inputs)

    def convert(base: str, source: str, target: str, consumer: str, group: int = 1) -> None:
        k = done.get((base, target))
        if k is None:
            done[(base, target)] = len(out)
            readers.append([consumer])
            out.append(_conversion(graph, base, source, target, consumer,
                                   dtypes.get(root.get(base, base))
                                   or _dtype(graph, base), group))
        elif readers[k][-1] != consumer:
            readers[k].append(consumer)

    for node in order:
        target = (ND if node.name in aicpu
                  and node.op_type not in caps.aicpu_format_agnostic_op_types
                  else _wants(node, graph, caps, dtypes))
        for k, name in enumerate(node.inputs):
            if not name:
                continue
            base = root.get(name, name)
            if base in known:
                continue
            have = held.get(base)
            if have is None:
                # a graph input is taken as its first reader needs it (plain for an agnostic
                # one: the module docstring) and is held so; anything else unwritten is plain
                have = held[base] = (target or ND) if base in inputs else ND
            src = base  # the tensor a conversion rewrites
            if have == FIVE_HD and base != name:
                shape, base_shape = _dims(graph, name), _dims(graph, base)
                if shape != base_shape and (len(shape) != 4 or len(base_shape) != 4
                                            or shape[1] != base_shape[1]):
                    convert(base, FIVE_HD, ND, node.name)  # a reshaping view reads it in ND
                    have = ND
                    src = name  # and a reader in another format converts the view's shape
            # a 5HD op's filter is read in FRACTAL_Z
            flt = _filter_layout(node, k, caps) if target == FIVE_HD else None
            want = flt.format if flt is not None else target
            if not target:
                if len(_dims(graph, name)) == 4:
                    target = have  # a format-agnostic op follows its first 4-D data input
            elif have and have != want and len(_dims(graph, name)) == 4:
                convert(src, have, want, node.name, flt.group if flt is not None else 1)
        if target == FIVE_HD:  # only a 4-D output can be held in 5HD
            five_hd_nodes.append(node.name)
            for t in node.outputs:
                if t:
                    held[t] = FIVE_HD if len(_dims(graph, t)) == 4 else ND
        else:
            for t in node.outputs:
                if t:
                    held[t] = ND
    return FormatPlan(tuple(attrs.evolve(c, readers=tuple(r)) if len(r) > 1 else c
                            for c, r in zip(out, readers, strict=True)),
                      frozenset(five_hd_nodes))


def node_formats(node: Node, graph: Graph, caps: GraphCaps) -> dict[str, Layout]:
    """The device layouts of the 4-D tensors a node computing in 5HD reads and writes, by
    the names it spells them with: NC1HWC0, except the filter of a 5HD op (a 4-D input
    after its data input: a convolution's weight) in FRACTAL_Z with the node's groups. Its
    other tensors are plain (ND)."""
    out: dict[str, Layout] = {}
    for k, t in enumerate(node.inputs):
        if t and len(_dims(graph, t)) == 4:
            out[t] = _filter_layout(node, k, caps) or _FIVE_HD_LAYOUT
    for t in node.outputs:
        if t and len(_dims(graph, t)) == 4:
            out[t] = _FIVE_HD_LAYOUT
    return out


_FIVE_HD_LAYOUT = Layout(FIVE_HD)


def _filter_layout(node: Node, k: int, caps: GraphCaps) -> Layout | None:
    """The FRACTAL_Z layout of input ``k`` of a node computing in 5HD when it is the node's
    filter (a 4-D input after the data input of a 5HD op: a convolution's weight, laid out
    with the node's groups), else ``None``."""
    if k == 0 or node.op_type not in caps.five_hd_op_types:
        return None
    return Layout(FRACTAL_Z, int(node.attrs.get("group", 1) or 1))


def _dtype(graph: Graph, name: str) -> str:
    t = graph.tensor(name)
    return t.dtype if t is not None else "float16"
