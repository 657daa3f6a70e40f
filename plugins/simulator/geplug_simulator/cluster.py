"""A multi-rank job in one process: every rank a virtual device (DESIGN.md "Scale").

:class:`ClusterJob` opens one system per rank (``RANK_ID`` / ``RANK_SIZE`` / ``DEVICE_ID``
from the topology, the rank table when one is given), compiles the model with its
collectives cut out (:mod:`geplug_simulator.collective`) for each rank, and runs the ranks
in lock step: stage by stage, each rank's graph runs up to its next collectives, the
collectives are computed exactly across the ranks' tensors, and the next stage is fed.

Times come from the device model (op costs, a slow rank's factor) and the HCCL model
(:func:`geplug.hccl.simulate`): at a collective every rank waits for the last to arrive,
then all finish together; each rank's communication task carries its transit, wait and
synchronisation times. Every rank's events go to its own system, so each rank writes its own
dumps and ``PROF_*`` directory.

:func:`run_analytic` is the analytic mode: one compile, no numerics, every rank's timeline
derived from the shared op costs, its slow-rank factor and the collectives, and each rank's
profiling written through a system of its own, one rank at a time (streamed: memory does
not grow with the rank count beyond a few floats per rank).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from geplug.errors import HcclError
from geplug.events import (
    DumpEvent,
    GraphEvent,
    OpRecord,
    RunInfo,
    StepEvent,
    TaskEvent,
    TensorRecord,
)
from geplug.hccl import Faults, HcclSettings, Topology, simulate
from geplug.hccl.faults import exec_timeout_error
from geplug.hccl.model import CollectiveCost
from geplug.hccl.report import comm_info
from geplug_simulator.collective import (
    Collective,
    SplitModel,
    output_feeds,
    plan_positions,
    run_collective,
    split_model,
)
from geplug_simulator.emit import OpPlan, stamp, wants_tensors
from geplug_simulator.importer import load_model

__all__ = ["ClusterJob", "comm_info", "rank_env", "run_analytic", "seeded_inputs",
           "server_config"]

OpenSystem = Callable[[Mapping[str, str]], Any]
"""Opens the system of one rank from its environment."""


def rank_env(topo: Topology, rank: int, base: Mapping[str, str],
             rank_table: str = "") -> dict[str, str]:
    """The environment rank ``rank`` runs with (as a launcher would set it)."""
    env = {k: v for k, v in base.items()
           if k not in ("RANK_ID", "RANK_SIZE", "DEVICE_ID", "ASCEND_DEVICE_ID",
                        "RANK_TABLE_FILE", "POD_NAME")}
    env["RANK_ID"] = str(rank)
    env["RANK_SIZE"] = str(topo.size)
    if rank_table:
        env["RANK_TABLE_FILE"] = rank_table
    else:
        env["DEVICE_ID"] = str(topo.places[rank].device_id)
    return env


def server_config(config: Any, topo: Topology, rank: int) -> Any:
    """The session configuration of ``rank``: ``config`` itself on a one-server job; on a
    job of several servers, the profiling output and dump_path gain a ``<server_id>``
    sub-directory, as each server of a real cluster writes to its own disk (device ids, and
    so ``device_<id>`` directories, repeat across servers)."""
    from geplug.config.parse import parse_source

    if topo.servers <= 1:
        return config
    cfg = parse_source(config)[0]
    server = topo.places[rank].server_id
    changes: dict[str, Any] = {}
    opts = cfg.profiling_options
    if opts is not None:
        import os

        base = opts.output or os.environ.get("ASCEND_WORK_PATH") or "."
        changes["profiling_options"] = attrs.evolve(
            opts, output=os.path.join(os.path.abspath(base), server))
    if cfg.dump_path:
        import os

        changes["dump_path"] = os.path.join(os.path.abspath(cfg.dump_path), server)
    return attrs.evolve(cfg, **changes) if changes else cfg


def seeded_inputs(compiled: Any, seed: int, rank: int,
                  skip: Sequence[str] = ()) -> dict[str, np.ndarray]:
    """Rank-dependent random inputs: ``numpy.random.default_rng([seed, rank])``, standard
    normal floats, integers in [0, 4), booleans (docs/distributed.md,
    :func:`geplug.backend.random_inputs`); ``skip``: inputs that are not the user's (the
    collectives' results)."""
    from geplug.backend import TensorSpec, random_inputs

    types = compiled.imported.types
    specs = {name: TensorSpec(name=name, dtype=types[name].dtype, shape=types[name].shape)
             if name in types else TensorSpec(name=name)
             for name in compiled.imported.inputs if name not in skip}
    return random_inputs(specs, [seed, rank])


@attrs.define
class _Rank:
    system: Any
    compiled: Any = None
    clock: float = 0.0


def _comm_record(system: Any, c: Collective, dtype: str) -> OpRecord:
    return OpRecord(name=c.name, op_type=c.op_type, onnx_op=c.onnx_op, engine="AI_CORE",
                    dtype=dtype, task_id=system.next_task_id(), stream_id=1,
                    task_type="COMMUNICATION", collective=True)


def task_positions(split: SplitModel, compiled: Any) -> dict[str, int]:
    """Each collective's place among ``compiled``'s ops (after folding and fusion)."""
    tasks = {t.name: t for t in compiled.device.tasks}
    return plan_positions(split, [tasks[op.name].task.members if op.name in tasks else (op.name,)
                                  for op in compiled.ops])


def _absent_error(topo: Topology, faults: Faults, settings: HcclSettings, c: Collective
                  ) -> HcclError:
    absent = sorted(faults.absent_ranks)
    waiting = [r for r in range(topo.size) if r not in faults.absent_ranks]
    listing = ", ".join(str(r) for r in absent)
    return HcclError(
        f"EI0006: Getting socket times out. Reason: rank(s) {listing} never joined "
        f"communicator hccl_world_group; ranks {_span(waiting)} waited "
        f"HCCL_CONNECT_TIMEOUT {settings.connect_timeout_s} s + 20 s = "
        f"{settings.connect_wait_s} s (simulated) at the first collective {c.hccl_name!r} and "
        "failed. Check the rank service processes of the ranks named (did they start, did "
        "they crash earlier?); if they start late, raise HCCL_CONNECT_TIMEOUT",
        code="EI0006", ranks=absent, option="GEPLUG_SIM_ABSENT_RANK")


def _span(ranks: Sequence[int]) -> str:
    if not ranks:
        return "none"
    if list(ranks) == list(range(ranks[0], ranks[0] + len(ranks))):
        return f"{ranks[0]}-{ranks[-1]}" if len(ranks) > 1 else str(ranks[0])
    return ", ".join(str(r) for r in ranks[:16]) + (" ..." if len(ranks) > 16 else "")


def _exec_check(settings: HcclSettings, c: Collective, arrivals: Sequence[float]) -> None:
    if not settings.exec_timeout_s:
        return
    last = int(np.argmax(np.asarray(arrivals)))
    spread = float(max(arrivals) - min(arrivals))
    if spread > settings.exec_timeout_s * 1e6:
        first = int(np.argmin(np.asarray(arrivals)))
        raise exec_timeout_error(c.hccl_name, "hccl_world_group", [last], first, spread / 1e6,
                                 settings.exec_timeout_s, simulated=True)


class ClusterJob:
    """Every rank of a small job as a virtual device; see the module docstring."""

    def __init__(self, topo: Topology, open_rank: OpenSystem, *, settings: HcclSettings,
                 faults: Faults, env: Mapping[str, str] | None = None,
                 rank_table: str = "") -> None:
        faults.check_ranks(topo.size)
        topo.check_device_ips(faults.nic_ips)
        self.topo = topo
        self.settings = settings
        self.faults = faults
        self.ranks: list[_Rank] = []
        base = dict(env or {})
        try:
            for r in range(topo.size):
                self.ranks.append(_Rank(open_rank(rank_env(topo, r, base, rank_table))))
        except BaseException:
            self.close()
            raise
        self.split: SplitModel | None = None
        self.positions: dict[str, int] = {}
        """Each collective's place among the compiled ops (:func:`task_positions`)."""
        self._costs: dict[tuple[str, float], CollectiveCost] = {}
        self._base_us: int | None = None

    # -- life cycle ------------------------------------------------------------------------

    def compile(self, model: Any, *, name: str = "") -> SplitModel:
        """Compile ``model`` (path, bytes or ModelProto) on every rank."""
        proto = load_model(model)
        stem = ""
        if isinstance(model, str):
            import os

            stem = os.path.splitext(os.path.basename(model))[0]
        split = split_model(proto, self.topo.size)
        for rank in self.ranks:
            rank.compiled = rank.system.compile(split.model,
                                                name=name or proto.graph.name or stem)
        self.split = split
        self.positions = task_positions(split, self.ranks[0].compiled) if self.ranks else {}
        order = list(reversed(sorted(split.collectives, key=lambda x: self.positions[x.name])))
        for rank in self.ranks:
            system = rank.system
            if system.profiling_enabled:
                c = rank.compiled
                records = list(c.ops)
                for coll in order:
                    records.insert(self.positions[coll.name],
                                   _comm_record(system, coll, "float32"))
                system.emit_profile(GraphEvent(
                    run=RunInfo(system=system, model_name=c.name, model_id=c.model_id,
                                step=-1, device_id=system.device_id), ops=records))
        return split

    def close(self) -> None:
        """Shut every rank's system down (its files complete)."""
        errors = []
        for rank in self.ranks:
            try:
                if not rank.system.closed:
                    rank.system.shutdown()
            except Exception as exc:  # keep closing the others
                errors.append(exc)
        if errors:
            raise errors[0]

    def __enter__(self) -> ClusterJob:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- running ---------------------------------------------------------------------------

    def cost(self, c: Collective, nbytes: float) -> CollectiveCost:
        """The HCCL model's cost of ``c`` with ``nbytes`` per rank (cached)."""
        key = (c.name, nbytes)
        found = self._costs.get(key)
        if found is None:
            found = self._costs[key] = simulate(
                self.topo, c.kind, nbytes, self.settings, self.faults, root=c.root,
                peer=c.dest)
        return found

    def run(self, feeds: Sequence[Mapping[str, Any]], step: int) -> list[dict[str, np.ndarray]]:
        """One step on every rank; returns each rank's outputs (exact collectives)."""
        split = self.split
        if split is None:
            raise HcclError("ClusterJob.run before compile()")
        n = self.topo.size
        if len(feeds) != n:
            raise HcclError(f"{len(feeds)} input sets for {n} ranks")
        from geplug_simulator.inputs import check_inputs

        internal = {c.output for c in split.collectives}
        checked = []
        for member, f in zip(self.ranks, feeds, strict=True):
            extra = sorted(set(f) & internal)
            if extra:
                raise HcclError(f"input {extra[0]!r} is the result of a collective node, not "
                                "an input of the model; do not feed it")
            placeholders = output_feeds(split, {}, member.compiled.types)
            ok = check_inputs(member.compiled.name, {**f, **placeholders},
                              member.compiled.imported.inputs, member.compiled._input_types)
            checked.append({k: v for k, v in ok.items() if k not in internal})
        known: list[dict[str, np.ndarray]] = [{} for _ in range(n)]
        inputs_of: dict[str, list[np.ndarray]] = {}
        for level in range(split.levels):
            stage = [c for c in split.collectives if c.level == level]
            for r, rank in enumerate(self.ranks):
                c = rank.compiled
                all_feeds = {**checked[r], **output_feeds(split, known[r], c.types)}
                need = [x.input for x in stage if x.input not in all_feeds
                        and rank.compiled.rewritten.constant(x.input) is None]
                got = dict(zip(need, c._ort_run(c._session, need, all_feeds), strict=True)) \
                    if need else {}
                for x in stage:
                    value = got.get(x.input)
                    if value is None:
                        value = all_feeds.get(x.input)
                    if value is None:
                        value = rank.compiled.rewritten.constant(x.input)
                    inputs_of.setdefault(x.name, []).append(np.asarray(value))
            if self.faults.absent_ranks and stage:
                raise _absent_error(self.topo, self.faults, self.settings, stage[0])
            for x in stage:
                outs = run_collective(x, inputs_of[x.name][-n:])
                for r in range(n):
                    known[r][x.output] = outs[r]
        results: list[dict[str, np.ndarray]] = []
        values_of: list[dict[str, np.ndarray]] = []
        for r, rank in enumerate(self.ranks):
            c = rank.compiled
            all_feeds = {**checked[r], **output_feeds(split, known[r], c.types)}
            if wants_tensors(rank.system, step):
                values = c._run_exposed(all_feeds)
            else:
                names = [o for o in split.outputs if o not in known[r]]
                values = dict(zip(names, c._ort_run(c._session, names, all_feeds),
                                  strict=True)) if names else {}
            values = {**values, **known[r]}
            values_of.append(values)
            results.append({o: values[o] for o in split.outputs})
        self._timeline(step, checked, values_of, {k: v[-n:] for k, v in inputs_of.items()})
        return results

    def _timeline(self, step: int, feeds: Sequence[Mapping[str, Any]],
                  values: Sequence[Mapping[str, np.ndarray]],
                  coll_inputs: Mapping[str, list[np.ndarray]]) -> None:
        """Every rank's events of this step (nothing when nobody asks for them)."""
        split = self.split
        assert split is not None
        n = self.topo.size
        prof = any(r.system.profiling_enabled for r in self.ranks)
        dumps = [wants_tensors(r.system, step) for r in self.ranks]
        if self._base_us is None:
            self._base_us = int(time.time() * 1e6)
        base = self._base_us
        start = max(max(r.clock for r in self.ranks), time.time() * 1e6 - base)
        runs = [RunInfo(system=r.system, model_name=r.compiled.name,
                        model_id=r.compiled.model_id, step=step,
                        device_id=r.system.device_id, time_base_us=base) for r in self.ranks]
        plans = [r.compiled._emitter.plans(prof) for r in self.ranks]
        clocks = np.full(n, start, dtype=np.float64)
        for r, rank in enumerate(self.ranks):
            if rank.system.profiling_enabled:
                rank.system.emit_profile(StepEvent(run=runs[r], phase="begin",
                                                   time_us=float(clocks[r])))
                clocks[r] = rank.compiled._emitter._copies(runs[r], float(clocks[r]), "H2D",
                                                           feeds[r])
        by_pos: dict[int, list[Collective]] = {}
        for coll in split.collectives:
            by_pos.setdefault(self.positions[coll.name], []).append(coll)
        records: dict[str, list[OpRecord]] = {}
        count = len(plans[0]) if plans else 0
        for i in range(count + 1):
            for coll in by_pos.get(i, []):
                self._collective(coll, step, runs, clocks, values, coll_inputs, dumps,
                                 records)
            if i == count:
                break
            for r, rank in enumerate(self.ranks):
                plan: OpPlan = plans[r][i]
                factor = self.faults.compute_factor(r, n)
                t = float(clocks[r])
                if dumps[r]:
                    em = rank.compiled._emitter
                    rank.system.emit_dump(DumpEvent(
                        kind="data", run=runs[r], op=plan.record,
                        inputs=em._tensors(plan.inputs, values[r], feeds[r]),
                        outputs=em._tensors(plan.outputs, values[r], feeds[r]),
                        timestamp_us=base + int(t)))
                if plan.task:
                    event = stamp(plan.task, runs[r], t)
                    if factor != 1.0:
                        event = attrs.evolve(event, duration_us=plan.duration_us * factor)
                    rank.system.emit_profile(event)
                clocks[r] = t + plan.duration_us * factor
        for r, rank in enumerate(self.ranks):
            if rank.system.profiling_enabled:
                outs = {o: values[r][o] for o in rank.compiled.imported.outputs
                        if o in values[r]}
                clocks[r] = rank.compiled._emitter._copies(runs[r], float(clocks[r]), "D2H",
                                                           outs)
                rank.system.emit_profile(StepEvent(run=runs[r], phase="end",
                                                   time_us=float(clocks[r])))
            rank.clock = float(clocks[r])

    def _collective(self, coll: Collective, step: int, runs: Sequence[RunInfo],
                    clocks: np.ndarray, values: Sequence[Mapping[str, np.ndarray]],
                    coll_inputs: Mapping[str, list[np.ndarray]], dumps: Sequence[bool],
                    records: dict[str, list[OpRecord]]) -> None:
        n = self.topo.size
        arrays = coll_inputs[coll.name]
        cost = self.cost(coll, float(arrays[0].nbytes))
        arrivals = [float(t) for t in clocks]
        _exec_check(self.settings, coll, arrivals)
        begin = max(arrivals)
        end = begin + cost.duration_us
        recs = records.get(coll.name)
        if recs is None:
            recs = records[coll.name] = [
                _comm_record(r.system, coll, str(arrays[i].dtype))
                for i, r in enumerate(self.ranks)]
        for r, rank in enumerate(self.ranks):
            run, op = runs[r], recs[r]
            ts = run.time_base_us + int(arrivals[r])
            if dumps[r]:
                rank.system.emit_dump(DumpEvent(
                    kind="data", run=run, op=op, phase="before", timestamp_us=ts,
                    inputs=[TensorRecord(name=coll.input, array=arrays[r],
                                         dtype=str(arrays[r].dtype))], outputs=[]))
                out = values[r][coll.output]
                rank.system.emit_dump(DumpEvent(
                    kind="data", run=run, op=op, phase="after",
                    timestamp_us=run.time_base_us + int(end), inputs=[],
                    outputs=[TensorRecord(name=coll.output, array=out, dtype=str(out.dtype))]))
            if rank.system.profiling_enabled:
                elapse = end - arrivals[r]
                info = comm_info(coll.hccl_name, coll.kind, cost, r, n, begin - arrivals[r],
                                 elapse)
                rank.system.emit_profile(TaskEvent(
                    run=run, op=op, start_us=arrivals[r], duration_us=elapse,
                    wait_us=begin - arrivals[r], bytes_moved=sum(b for _, b, _ in info.links),
                    input_shapes=[arrays[r].shape], input_dtypes=[str(arrays[r].dtype)],
                    output_shapes=[values[r][coll.output].shape],
                    output_dtypes=[str(values[r][coll.output].dtype)], comm=info))
            clocks[r] = end


def run_analytic(topo: Topology, open_rank: OpenSystem, model: Any, *, steps: int,
                 settings: HcclSettings, faults: Faults, env: Mapping[str, str] | None = None,
                 rank_table: str = "", progress: Callable[[int], None] | None = None
                 ) -> dict[str, Any]:
    """The analytic mode (see the module docstring); returns a summary of the job."""
    faults.check_ranks(topo.size)
    topo.check_device_ips(faults.nic_ips)
    base_env = dict(env or {})
    proto = load_model(model)
    split = split_model(proto, topo.size)
    n = topo.size
    first = open_rank(rank_env(topo, 0, base_env, rank_table))
    try:
        compiled = first.compile(split.model, name=proto.graph.name or "")
        ops = list(compiled.ops)
        positions = task_positions(split, compiled)
        durations = np.array([compiled.costs[o.name].duration_us for o in ops])
        types = compiled.types
        in_bytes = {}
        for coll in split.collectives:
            t = types.get(coll.input)
            if t is None or t.shape is None or any(d is None for d in t.shape):
                raise HcclError(f"--analytic: collective {coll.name!r} needs a static input "
                                f"shape (its input {coll.input!r} has {t.shape if t else None})")
            from geplug_simulator.cost import dtype_bytes

            in_bytes[coll.name] = float(np.prod(t.shape) * dtype_bytes(t.dtype))
        if faults.absent_ranks and split.collectives:
            raise _absent_error(topo, faults, settings, split.collectives[0])
        costs = {c.name: simulate(topo, c.kind, in_bytes[c.name], settings, faults,
                                  root=c.root, peer=c.dest) for c in split.collectives}
        factors = np.array([faults.compute_factor(r, n) for r in range(n)])
        # the per-rank schedule of one step: (op index or collective, start per rank, ...)
        by_pos: dict[int, list[Collective]] = {}
        for coll in split.collectives:
            by_pos.setdefault(positions[coll.name], []).append(coll)
        coll_times: list[tuple[Collective, np.ndarray, float]] = []
        clock = np.zeros(n)
        op_start_rows: list[np.ndarray] = []
        for i in range(len(ops) + 1):
            for coll in by_pos.get(i, []):
                arrivals = clock.copy()
                _exec_check(settings, coll, arrivals.tolist())
                begin = float(arrivals.max())
                coll_times.append((coll, arrivals, begin))
                clock[:] = begin + costs[coll.name].duration_us
            if i == len(ops):
                break
            op_start_rows.append(clock.copy())
            clock += durations[i] * factors
        step_len = clock.copy()
        base = int(time.time() * 1e6)
        period = float(step_len.max()) + 10.0
        plans = compiled._emitter.plans(True)
        for r in range(n):
            system = first if r == 0 else open_rank(rank_env(topo, r, base_env, rank_table))
            try:
                _emit_rank(system, r, n, compiled, ops, plans, split, positions, costs,
                           coll_times, op_start_rows, durations, factors[r], steps, base, period)
            finally:
                if r != 0:
                    system.shutdown()
            if progress is not None:
                progress(r)
    finally:
        if not first.closed:
            first.shutdown()
    return {"ranks": n, "steps": steps, "step_time_us": float(step_len.max()),
            "collectives": {c.name: {"algorithm": costs[c.name].algorithm,
                                     "duration_us": costs[c.name].duration_us}
                            for c in split.collectives}}


def _emit_rank(system: Any, r: int, n: int, compiled: Any, ops: Sequence[OpRecord],
               plans: Sequence[OpPlan], split: SplitModel, positions: Mapping[str, int],
               costs: Mapping[str, CollectiveCost],
               coll_times: Sequence[tuple[Collective, np.ndarray, float]],
               op_start_rows: Sequence[np.ndarray], durations: np.ndarray, factor: float,
               steps: int, base: int, period: float) -> None:
    if not system.profiling_enabled:
        return
    model_id = compiled.model_id
    run0 = RunInfo(system=system, model_name=compiled.name, model_id=model_id, step=-1,
                   device_id=system.device_id, time_base_us=base)
    recs = {c.name: _comm_record(system, c, "float32") for c in split.collectives}
    graph_ops = list(ops)
    for coll in reversed(sorted(split.collectives, key=lambda x: positions[x.name])):
        graph_ops.insert(positions[coll.name], recs[coll.name])
    system.emit_profile(GraphEvent(run=run0, ops=graph_ops))
    by_pos: dict[int, list[tuple[Collective, np.ndarray, float]]] = {}
    for item in coll_times:
        by_pos.setdefault(positions[item[0].name], []).append(item)
    for step in range(steps):
        off = step * period
        run = attrs.evolve(run0, step=step)
        system.emit_profile(StepEvent(run=run, phase="begin", time_us=off))
        end = off
        for i in range(len(plans) + 1):
            for coll, arrivals, begin in by_pos.get(i, []):
                cost = costs[coll.name]
                finish = begin + cost.duration_us
                elapse = finish - float(arrivals[r])
                info = comm_info(coll.hccl_name, coll.kind, cost, r, n,
                                 begin - float(arrivals[r]), elapse)
                system.emit_profile(TaskEvent(
                    run=run, op=recs[coll.name], start_us=off + float(arrivals[r]),
                    duration_us=elapse, wait_us=begin - float(arrivals[r]),
                    bytes_moved=sum(b for _, b, _ in info.links), comm=info))
                end = max(end, off + finish)
            if i == len(plans):
                break
            t = off + float(op_start_rows[i][r])
            event = stamp(plans[i].task, run, t)
            if factor != 1.0:
                event = attrs.evolve(event, duration_us=float(durations[i] * factor))
            system.emit_profile(event)
            end = max(end, t + float(durations[i] * factor))
        system.emit_profile(StepEvent(run=run, phase="end", time_us=end))
