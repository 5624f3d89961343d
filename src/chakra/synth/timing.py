"""The timing engine: runs one rank's program on a model of a CPU and a GPU's streams.

:class:`RankEngine` turns actions into timed records (integer ns) and ground-truth edges,
handing each to a :class:`RankSink` as soon as it is final, so nothing grows with the trace.
Collectives suspend the engine (:meth:`RankEngine.run` is a generator) until the job driver
knows when the collective ends on every member rank.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Optional

import msgspec

from chakra.synth.options import scale_ns
from chakra.synth.program import US, JobPlan, rank_actions
from chakra.synth.rank_state import (
    CORRELATION_BASE,
    CollectiveArrival,
    EventState,
    OpenOp,
    RankSink,
    StreamState,
    rank_identity,
    rank_seed,
)
from chakra.synth.records import (
    AwaitCpuCollective,
    CpuCollective,
    DeviceSync,
    EtNode,
    EventRecord,
    EventSync,
    Gap,
    GpuRecord,
    HostOpRecord,
    Launch,
    OpBegin,
    OpEnd,
    RuntimeRecord,
    StreamSync,
    StreamWait,
    SwitchThread,
)
from chakra.synth.timing_sync import SyncHandlers
from chakra.synth.timing_workers import WorkerThreads
from chakra.synth.vocabulary import EVALUATE_FUNCTION, PROCESS_GROUP_INIT, SCOPE_USER

#: ``tied_zero_ops``: share of host ops preceded by a 0 us sibling starting at the same instant.
TIED_ZERO_OP_SHARE = 0.08
ZERO_LENGTH_OP = OpBegin("aten::lift_fresh", schema="aten::lift_fresh(Tensor(a) self) -> Tensor(a)")


class RankEngine(SyncHandlers, WorkerThreads):
    """Executes one rank's program; a lifecycle object (clocks, open ops, stream state).

    Times only move forward on the CPU clock ``now``; a GPU op starts no earlier than the end
    of its launch call plus a launch latency, the end of the previous op on its stream and the
    GPU ops its stream waits for (events); a blocking call returns after what it waits for.
    The options' speed factors scale what is drawn, after the draw (:meth:`_cpu_ns`,
    :meth:`_duration`), so every factor draws the same random sequence.
    """

    def __init__(self, plan: JobPlan, rank: int, sink: RankSink) -> None:
        options = plan.options
        self._plan, self._rank, self._sink = plan, rank, sink
        self._rng = random.Random(rank_seed(options.seed, rank))
        self._legacy = options.legacy_host_et
        self._tied_zero_ops = options.tied_zero_ops
        self._host_step = options.host_step
        self._cpu_factor, self._gpu_factor = options.cpu_factor, options.gpu_factor
        identity = rank_identity(plan, rank)
        self.device, self.tids = identity.device, identity.tids
        self.now = identity.start_ns + self._rng.randrange(50 * US)
        self._stacks: tuple[list[OpenOp], ...] = ([], [], [], [])  # see HostOpRecord.thread
        self._thread = 0
        self._next_host_id = 2  # 1 is the process root
        self._thread_roots: list[Optional[int]] = [None, None, None, None]
        self._external_id = 3 + options.seed % 50
        self._rf_id = 0
        self._legacy_rf_id = 0
        self._ev_idx = 0
        self._correlation = CORRELATION_BASE + options.seed % 5000
        self._cuda_event = 0
        self._step = -1
        self._covered = False
        self._pg_init_written = False
        self._streams: dict[int, StreamState] = {}
        self._events: dict[int, EventState] = {}
        self._forward_host_ids: dict[int, int] = {}
        self._last_shallow: list[Optional[int]] = [None, None, None, None]
        self._cpu_collective_end: tuple[Optional[int], int] = (None, 0)  # (host id, end)
        self._last_closed_main: Optional[int] = None  # host id of the main thread's last op
        self._stale_parents = options.stale_host_parents
        self._ended_autograd: Optional[int] = None  # the step's last evaluate_function ended
        self._worker_recorded = rank not in options.unrecorded_gloo_ranks
        self._inter_thread_src: Optional[int] = None
        self.counts = {"host_ops": 0, "gpu_ops": 0, "runtime_calls": 0, "edges": 0}
        self._handlers = {
            OpBegin: self._begin,
            OpEnd: self._end,
            Gap: self._gap,
            Launch: self._launch,
            EventRecord: self._record,
            StreamWait: self._stream_wait,
            StreamSync: self._stream_sync,
            DeviceSync: self._device_sync,
            EventSync: self._event_sync,
            SwitchThread: self._switch,
            AwaitCpuCollective: self._await_cpu_collective,
        }

    # --- driving ------------------------------------------------------------------------------

    def run(self) -> Iterator[CollectiveArrival]:
        """Execute the program; yield at each collective and expect its end time (ns) back."""
        handlers = self._handlers
        for action in rank_actions(self._plan, self._rank):
            if type(action) is Launch and action.collective is not None:
                call_record, start = self._enqueue_collective(action)
                end = yield CollectiveArrival(
                    action.collective, self._rank, start, call_record.correlation
                )
                self._finish_gpu(action, call_record, start, end)
            elif type(action) is CpuCollective:
                spans = self._hand_to_worker()
                end = yield CollectiveArrival(action.call, self._rank, spans[3], 0, cpu=True)
                self._worker_ran(action, spans, end)
            else:
                handlers[type(action)](action)
        self._sink.et_node(self._process_root())

    def _edge(self, kind: str, src: str, dst: str) -> None:
        self.counts["edges"] += 1
        self._sink.edge(kind, src, dst)

    def _uniform(self, low_ns: int, high_ns: int) -> int:
        return low_ns + int(self._rng.random() * (high_ns - low_ns))

    def _cpu_ns(self, low_ns: int, high_ns: int) -> int:
        """A span on the CPU clock drawn from [low_ns, high_ns), times ``cpu_factor``."""
        return scale_ns(self._uniform(low_ns, high_ns), self._cpu_factor)

    # --- host ops -----------------------------------------------------------------------------

    def _begin(self, action: OpBegin) -> None:
        if action.step >= 0:
            self._start_step(action.step)
        tied = self._tied_zero_ops and action.step < 0 and self._inter_thread_src is None
        if tied and self._rng.random() < TIED_ZERO_OP_SHARE:
            self._open(ZERO_LENGTH_OP, jitter=False)
            self._close(jitter=False)
            self._open(action, jitter=False)  # starts at the same instant as its sibling
            return
        self._open(action, jitter=True)

    def _open(self, action: OpBegin, jitter: bool) -> None:
        stack = self._stacks[self._thread]
        if jitter:
            self.now += self._cpu_ns(300, 2 * US)
        op = OpenOp(action, self.now)
        parent = stack[-1] if stack else None
        self._rf_id += 2 if self._rng.random() < 0.03 else 1
        op.rf_id = self._rf_id
        op.external_id = self._external_id
        self._external_id += 1
        op.ev_idx = self._ev_idx
        self._ev_idx += 1
        op.parent_host_id = parent.host_id if parent is not None else None
        op.host_id = op.et_rf_id = None
        op.et_parent = 0
        if self._covered:
            self._assign_host_id(op, parent)
        stack.append(op)
        if self._inter_thread_src is not None:
            if op.host_id is not None:
                self._edge("inter_thread", f"host:{self._inter_thread_src}", f"host:{op.host_id}")
            self._inter_thread_src = None
        if action.step >= 0 and self._covered and not self._pg_init_written and not self._legacy:
            self._write_pg_init(op)
        if jitter:
            self.now += self._cpu_ns(500, 3 * US)

    def _assign_host_id(self, op: OpenOp, parent: Optional[OpenOp]) -> None:
        root = self._thread_roots[self._thread]
        if root is None:
            root = self._thread_roots[self._thread] = self._new_host_id()
            self._sink.et_node(EtNode(root, "thread", 1, 0, self._thread + 1, SCOPE_USER))
        op.host_id = self._new_host_id()
        op.et_parent = parent.host_id if parent is not None else root
        if op.action.stale_parent and self._ended_autograd is not None:
            op.et_parent = self._ended_autograd
        op.et_rf_id = self._new_legacy_rf_id() if self._legacy else op.rf_id
        if op.action.fwd_thread == 0 and op.action.seq >= 0:
            self._forward_host_ids[op.action.seq] = op.host_id

    def _new_host_id(self) -> int:
        value = self._next_host_id
        self._next_host_id += 1
        return value

    def _new_legacy_rf_id(self) -> int:
        self._legacy_rf_id += 1
        return self._legacy_rf_id

    def _write_pg_init(self, step_op: OpenOp) -> None:
        self._pg_init_written = True
        self._rf_id += 1
        rf_id = self._new_legacy_rf_id() if self._legacy else self._rf_id
        node = EtNode(
            self._new_host_id(),
            PROCESS_GROUP_INIT,
            step_op.host_id,
            rf_id,
            1,
            SCOPE_USER,
            (("String", self._pg_table()),),
        )
        self._sink.et_node(node)

    def _pg_table(self) -> str:
        """As PyTorch writes it: the default group (first) lists no ranks, meaning all."""
        groups = self._plan.groups
        entries = [
            {
                "pg_name": g.name,
                "pg_desc": g.desc,
                "backend_config": "cuda:nccl",
                "ranks": [] if index == 0 else list(g.ranks),
                "group_size": len(g.ranks),
                "group_count": len(groups),
            }
            for index, g in enumerate(groups)
        ]
        return msgspec.json.encode(entries).decode()

    def _process_root(self) -> EtNode:
        return EtNode(1, "process", 1, 0, 0, SCOPE_USER)

    def _start_step(self, step: int) -> None:
        self._step = step
        self._covered = self._host_step is None or self._host_step == step
        self._events.clear()
        self._forward_host_ids.clear()
        self._ended_autograd = None

    def _end(self, _action: OpEnd) -> None:
        self._close(jitter=True)

    def _close(self, jitter: bool) -> None:
        stack = self._stacks[self._thread]
        op = stack.pop()
        if jitter:
            self.now += self._cpu_ns(300, 2 * US)
        action = op.action
        fw_parent = 0
        if action.backward_of >= 0:
            fw_parent = self._forward_host_ids.get(action.backward_of, 0)
        record = HostOpRecord(
            op.host_id,
            op.parent_host_id,
            op.et_parent,
            op.rf_id,
            op.et_rf_id,
            op.external_id,
            op.ev_idx,
            self._thread,
            self.tids[self._thread],
            op.ts_ns,
            self.now,
            self._step,
            action,
            fw_parent,
        )
        self.counts["host_ops"] += 1
        self._sink.host_op(record)
        if len(stack) <= (1 if self._thread == 0 else 0) and action.step < 0:
            self._last_shallow[self._thread] = op.host_id
        if self._thread == 0:
            self._last_closed_main = op.host_id
        elif self._stale_parents and action.name.startswith(EVALUATE_FUNCTION):
            self._ended_autograd = op.host_id

    def _gap(self, action: Gap) -> None:
        self.now += self._cpu_ns(action.low_ns, action.high_ns)

    def _switch(self, action: SwitchThread) -> None:
        self._inter_thread_src = self._last_shallow[self._thread]
        self._thread = action.thread
        self.now += self._cpu_ns(action.low_ns, action.high_ns)

    # --- runtime calls and GPU ops ------------------------------------------------------------

    def _stream(self, stream: int) -> StreamState:
        state = self._streams.get(stream)
        if state is None:
            state = self._streams[stream] = StreamState()
        return state

    def _call(self, name: str, dur_ns: int, stream: Optional[int]) -> RuntimeRecord:
        """A runtime call starting now and lasting ``dur_ns`` (drawn at CPU factor 1, scaled
        here); ``now`` moves to its end."""
        self.now += self._cpu_ns(200, US)
        dur_ns = scale_ns(dur_ns, self._cpu_factor)
        op = self._stacks[self._thread][-1]
        self._correlation += 1
        record = RuntimeRecord(
            self._correlation,
            name,
            self.tids[self._thread],
            self.now,
            self.now + dur_ns,
            op.external_id,
            op.host_id,
            stream,
        )
        self.now += dur_ns
        return record

    def _emit_call(self, record: RuntimeRecord) -> None:
        self.counts["runtime_calls"] += 1
        self._sink.runtime(record)

    def _earliest_start(self, stream: StreamState, not_before: int) -> int:
        start = max(not_before, stream.last_end_ns)
        for _correlation, end in stream.waits:
            start = max(start, end)
        return start

    def _launch(self, action: Launch) -> None:
        stream = self._stream(action.stream)
        if action.blocking:
            call = self._call(action.api, 0, action.stream)
            start = self._earliest_start(stream, call.ts_ns + self._uniform(US, 2 * US))
            end = start + self._duration(action.base_ns)
            self.now = end + self._cpu_ns(US, 3 * US)
            call = msgspec.structs.replace(call, end_ns=self.now)
            self._finish_gpu(action, call, start, end)
            self._edge("host_sync", f"gpu:{call.correlation}", f"runtime:{call.correlation}")
            return
        call = self._call(action.api, self._uniform(2500, 8 * US), action.stream)
        start = self._earliest_start(stream, call.end_ns + self._uniform(500, 2 * US))
        self._finish_gpu(action, call, start, start + self._duration(action.base_ns))

    def _duration(self, base_ns: int) -> int:
        """``base_ns`` with +-15% noise, at least 1 us, then times ``gpu_factor`` (at least 1
        ns): the minimum applies before the factor, so every GPU op of a job at factor F
        lasts F times as long as at factor 1 (to the ns)."""
        drawn = max(1_000, int(base_ns * (0.85 + 0.3 * self._rng.random())))
        return max(1, scale_ns(drawn, self._gpu_factor))

    def _enqueue_collective(self, action: Launch) -> tuple[RuntimeRecord, int]:
        stream = self._stream(action.stream)
        call = self._call(action.api, self._uniform(4 * US, 12 * US), action.stream)
        return call, self._earliest_start(stream, call.end_ns + self._uniform(500, 2 * US))

    def _finish_gpu(self, action: Launch, call: RuntimeRecord, start: int, end: int) -> None:
        """Emit the launch call, the GPU op and its stream_order/event_wait/launch edges."""
        self._emit_call(call)
        stream = self._stream(action.stream)
        gpu = f"gpu:{call.correlation}"
        if stream.last_correlation:
            self._edge("stream_order", f"gpu:{stream.last_correlation}", gpu)
        for src, _end in stream.waits:
            self._edge("event_wait", f"gpu:{src}", gpu)
        if call.host_id is not None:
            self._edge("launch", f"host:{call.host_id}", gpu)
        stream.waits = []
        stream.last_correlation, stream.last_end_ns = call.correlation, end
        record = GpuRecord(
            call.correlation,
            action.name,
            action.category,
            action.stream,
            self.device,
            start,
            end,
            call.external_id,
            call.host_id,
            call,
            action.nbytes,
            action.collective,
        )
        self.counts["gpu_ops"] += 1
        self._sink.gpu(record)
