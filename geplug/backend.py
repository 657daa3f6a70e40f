"""The backend contract: what a runtime and a compiled model give the core and the CLI.

A **backend** is a plugin implementing ``geplug_init_system(system)``: it returns a
:class:`Runtime` for the system's product (or ``None`` to pass). ``system.compile(model)``
returns the runtime's :class:`CompiledModel`. The core, the CLI (``geplug compile`` / ``run``)
and the backend conformance suite (``pytest -p geplug.testing
--geplug-backend-conformance=NAME``) use only the members declared here - never a backend's
private attributes - so a second backend (``plugins/torch``) is a drop-in.

Everything about the *product* rather than about computing numbers is shared, here or in the
modules named below, so every backend behaves the same:

- the per-op precision decision: :func:`decide` (:mod:`geplug.precision`);
- whether a step needs tensors for the dump writers: :func:`wants_tensors`;
- the event records handed to the writers: :mod:`geplug.events` (``DumpEvent``,
  ``TaskEvent``, ``GraphEvent``, ``OpRecord``, ``RunInfo``), emitted through
  ``system.emit_dump`` / ``system.emit_profile``;
- kernel_meta files: :func:`geplug.kernel_meta.write_kernel_meta`;
- the unmatched op_precision_mode / modify_mixlist names check: done by the core at shutdown
  over the decisions of every compiled model (:mod:`geplug.precision.unmatched`);
- the device model's memory report: the ``memory`` member (filled by the device model).

``docs/backends.md`` explains how to write a backend.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs
import numpy as np

from geplug.precision import OpDecision, decide

if TYPE_CHECKING:
    from geplug.runtime.system import System

__all__ = [
    "COMPILED_MEMBERS",
    "RUNTIME_MEMBERS",
    "CompiledModel",
    "Runtime",
    "SampleModel",
    "Subcommand",
    "TensorSpec",
    "decide",
    "generated_bytes",
    "missing_members",
    "random_inputs",
    "wants_tensors",
]


@attrs.frozen(kw_only=True)
class TensorSpec:
    """A graph input's name, dtype (numpy name, ``bfloat16`` too) and shape (``None`` for an
    unknown rank; a ``None`` dimension is symbolic)."""

    name: str
    dtype: str = "float32"
    shape: tuple[int | None, ...] | None = None


@attrs.frozen(kw_only=True)
class SampleModel:
    """A small model a backend offers for ``geplug demo`` and the conformance suite.

    ``model`` is whatever the backend's ``compile`` takes (an ``onnx.ModelProto``, a torch
    module...); ``inputs`` are feeds for :meth:`CompiledModel.run`.
    """

    name: str
    model: Any
    inputs: Mapping[str, np.ndarray]
    description: str = ""


@attrs.frozen(kw_only=True)
class Subcommand:
    """A ``geplug`` sub-command a plugin adds (``geplug_subcommands``; conda's subcommand
    hook is the model): ``configure(parser)`` adds its arguments, ``action(args)`` runs it
    and returns the exit status. The simulator's ``geplug demo`` is one."""

    name: str
    summary: str
    action: Callable[[argparse.Namespace], int]
    configure: Callable[[argparse.ArgumentParser], None] | None = None
    description: str = ""


@runtime_checkable
class CompiledModel(Protocol):
    """A model compiled for one system's product (what ``system.compile`` returns)."""

    @property
    def name(self) -> str:
        """The model name (dump paths, profiling rows)."""

    @property
    def model_id(self) -> int:
        """The graph id, from ``system.next_model_id()``."""

    @property
    def decisions(self) -> Sequence[OpDecision]:
        """One :class:`~geplug.precision.OpDecision` per op, in execution order."""

    @property
    def inputs(self) -> Mapping[str, TensorSpec]:
        """The graph inputs ``run`` takes, in order, with their types."""

    @property
    def outputs(self) -> Sequence[str]:
        """The names of the mapping ``run`` returns, in order."""

    @property
    def op_times(self) -> Mapping[str, float]:
        """Simulated device time per task (node name, a fused task's name, or the name of a
        task GE inserts such as ``trans_TransData_0`` -> µs), from the product's figures."""

    @property
    def simulated_time_us(self) -> float:
        """Simulated device time of one step, µs (never CPU time)."""

    @property
    def memory(self) -> Any | None:
        """The device model's memory report of this model (weights, activation peak,
        workspace against the product's HBM), ``None`` when the backend has none."""

    @property
    def kernel_meta_files(self) -> Sequence[str]:
        """The kernel_meta files compile wrote (empty when ``op_debug_level`` writes none)."""

    def run(self, inputs: Mapping[str, Any], step: int | None = None) -> Mapping[str, Any]:
        """Run one step (``step`` numbers it for dumps and profiling; ``None``: the next one)
        and return ``{output name: array}``. Bad inputs raise a
        :class:`~geplug.errors.GeplugError` naming the input, never a traceback of the
        backend's own library."""

    def close(self) -> None:
        """Release what the model holds (idempotent)."""


@runtime_checkable
class Runtime(Protocol):
    """What a backend's ``geplug_init_system`` returns for a system."""

    @property
    def name(self) -> str:
        """The backend's name (its plugin name, e.g. ``simulator``)."""

    def compile(self, model: Any, **options: Any) -> CompiledModel:
        """Compile ``model`` for the system's product; unknown options are an error."""

    def sample_models(self) -> Sequence[SampleModel]:
        """Small models this backend runs (``geplug demo``, the conformance suite)."""

    def close(self) -> None:
        """Release every compiled model (called once, by ``system.shutdown()``)."""


def _members(protocol: type) -> tuple[str, ...]:
    return tuple(sorted(n for n, v in vars(protocol).items()
                        if not n.startswith("_") and (callable(v) or isinstance(v, property))))


RUNTIME_MEMBERS = _members(Runtime)
"""The members a runtime must have."""
COMPILED_MEMBERS = _members(CompiledModel)
"""The members a compiled model must have."""


def missing_members(obj: object, members: Sequence[str]) -> list[str]:
    """The names of ``members`` that ``obj`` lacks (``[]`` when it fulfils the contract)."""
    return [m for m in members if not hasattr(obj, m)]


def wants_tensors(system: System, step: int) -> bool:
    """Whether the dump writers need step ``step``'s tensors (dump step, overflow check)."""
    from geplug.dump.policy import wants_tensors as policy

    return bool(policy(system.config, step))


def generated_bytes(inputs: Mapping[str, TensorSpec]) -> int:
    """Bytes of the feeds :func:`random_inputs` would generate for ``inputs`` (a symbolic
    dimension counts as 1)."""
    total = 0
    for spec in inputs.values():
        shape = tuple(int(d) if d else 1 for d in (spec.shape or ()))
        size = 2 if spec.dtype == "bfloat16" else _itemsize(spec.dtype)
        total += math.prod(shape) * size
    return total


def _itemsize(dtype: str) -> int:
    try:
        return int(np.dtype(dtype).itemsize)
    except TypeError:
        return 8  # an ONNX type numpy lacks: counted as the widest scalar


def random_inputs(inputs: Mapping[str, TensorSpec],
                  seed: int | Sequence[int] = 0) -> dict[str, np.ndarray]:
    """Seeded feeds for ``inputs`` (a symbolic dimension becomes 1): normal floats, 0/1
    booleans, small integers; ``seed`` as ``numpy.random.default_rng`` takes it (a rank's
    ``[seed, rank]``).

    At most :data:`geplug.limits.MAX_GENERATED_INPUT_BYTES` in all: a model whose declared
    input shapes need more is a :class:`RunError` naming the largest input (the simulator
    runs on this host; a shape of 2**40 would take its memory, not a device's).
    """
    import ml_dtypes

    from geplug.errors import RunError
    from geplug.limits import MAX_GENERATED_INPUT_BYTES

    need = generated_bytes(inputs)
    if need > MAX_GENERATED_INPUT_BYTES:
        name, spec = max(inputs.items(), key=lambda kv: generated_bytes({kv[0]: kv[1]}))
        raise RunError(
            f"the model's inputs need {need} bytes of generated data (input {name!r}: shape "
            f"{list(spec.shape or ())} {spec.dtype}); geplug generates at most "
            f"{MAX_GENERATED_INPUT_BYTES} bytes (docs/limits.md): give your own inputs "
            "(--input NAME=FILE.npy) or a model with smaller input shapes",
            argument="inputs")
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for name, spec in inputs.items():
        shape = tuple(int(d) if d else 1 for d in (spec.shape or ()))
        dtype = spec.dtype
        if dtype.startswith("float") or dtype == "bfloat16":
            np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
            feeds[name] = rng.standard_normal(shape).astype(np_dtype)
        elif dtype == "bool":
            feeds[name] = rng.integers(0, 2, shape).astype(bool)
        else:
            feeds[name] = rng.integers(0, 4, shape).astype(dtype)
    return feeds
