"""The gloo worker thread of :class:`~chakra.synth.timing.RankEngine` (``worker_threads``).

A mixin. The worker runs beside the main thread, off the engine's CPU clock ``now``: its
``gloo:`` op starts after the main thread's ``c10d::`` op returned (an inter-thread edge
issuer -> work), runs an ``aten::view``,
joins the other ranks (the job driver's meeting, as for NCCL kernels) and ends at the
meeting's common end. The host ET files the ``gloo:`` op under the main thread's ``c10d::``
op (host ET thread 0, tid 1) while Kineto shows it on the worker's OS thread; the
``aten::view`` sits under the worker's own host ET thread node (on a rank of
``unrecorded_gloo_ranks`` the worker runs no ``aten::view``, so the host ET has no thread node
for it). A blocking collective (``async_op=False``) files its ``gloo:`` op under the op open on
the main thread (``ProfilerStep#N`` or an annotation), as a worker that starts after the
``c10d::`` op returned is, and the main thread waits for it in no op: a
:class:`~chakra.synth.records.HostWaitRecord`.
"""

from __future__ import annotations

from typing import Optional

from chakra.synth.program import US
from chakra.synth.rank_state import OpenOp
from chakra.synth.records import (
    AwaitCpuCollective,
    CpuCollective,
    HostOpRecord,
    HostWaitRecord,
    OpBegin,
)
from chakra.synth.vocabulary import SCOPE_USER, Category
from chakra.synth.worker_threads import GLOO_WORKER_THREAD

#: (gloo op start, view start, view end, arrival at the meeting), ns.
WorkerSpans = tuple[int, int, int, int]
_VIEW = OpBegin("aten::view", inputs=(("Tensor(float)", (1 << 10,)), ("GenericList[Int]", [-1])))


class WorkerThreads:
    """Hand-off to the gloo worker and the main thread's wait for it."""

    def _hand_to_worker(self) -> WorkerSpans:
        """Draw the worker's spans from the main clock (which does not move): it wakes,
        runs ``aten::view``, then arrives at the collective."""
        start = self.now + self._cpu_ns(2 * US, 6 * US)
        view_start = start + self._cpu_ns(3 * US, 8 * US)
        view_end = view_start + self._cpu_ns(1 * US, 3 * US)
        return start, view_start, view_end, view_end + self._cpu_ns(2 * US, 5 * US)

    def _worker_ran(self, action: CpuCollective, spans: WorkerSpans, end: int) -> None:
        """Emit the ``gloo:`` op (``spans[0]`` to the meeting's ``end``) and its view; block
        the main thread until ``end`` when the collective is blocking."""
        start, view_start, view_end, _arrival = spans
        enclosing = self._stacks[0][-1]
        if action.blocking:  # the c10d:: op that just returned; the op it returned into
            issuer, parent = self._last_closed_main, enclosing.host_id
        else:  # the c10d:: op that just returned, its host ET parent (None: uncovered)
            issuer = parent = self._last_shallow[0]
        gloo_action = OpBegin(action.name, Category.USER_ANNOTATION, scope=SCOPE_USER)
        gloo = self._worker_open(gloo_action, parent, 0, start)
        if issuer is not None and gloo.host_id is not None:
            self._edge("inter_thread", f"host:{issuer}", f"host:{gloo.host_id}")
        if self._worker_recorded:
            view = self._worker_open(_VIEW, None, GLOO_WORKER_THREAD, view_start)
            self._worker_record(view, GLOO_WORKER_THREAD, view_end)
        self._worker_record(gloo, 0, end)
        if action.blocking:
            self._block_main(enclosing, gloo, end)
        else:
            self._cpu_collective_end = (gloo.host_id, end)

    def _block_main(self, enclosing: OpenOp, gloo: OpenOp, end: int) -> None:
        """The main thread, inside ``enclosing``, waits in no op until the worker's ``gloo``
        op ended at ``end`` (plus a wake-up); its next host op depends on that op."""
        blocked_from = self.now
        self.now = max(self.now, end + self._cpu_ns(US, 3 * US))
        record = HostWaitRecord(
            self.tids[0],
            blocked_from,
            self.now,
            self._step,
            enclosing.external_id,
            enclosing.host_id,
            gloo.external_id,
            gloo.host_id,
        )
        self._sink.host_wait(record)
        self._inter_thread_src = gloo.host_id

    def _worker_open(
        self, action: OpBegin, parent: Optional[int], thread: int, ts_ns: int
    ) -> OpenOp:
        """An op of the worker starting at ``ts_ns``, its ids drawn as :meth:`_open` does,
        filed under host op ``parent`` (else the root of host ET thread ``thread``)."""
        op = OpenOp(action, ts_ns)
        self._rf_id += 1
        op.rf_id = self._rf_id
        op.external_id = self._external_id
        self._external_id += 1
        op.ev_idx = self._ev_idx
        self._ev_idx += 1
        op.parent_host_id = parent
        op.host_id = op.et_rf_id = None
        op.et_parent = 0
        if self._covered:
            running, self._thread = self._thread, thread
            self._assign_host_id(op, None)
            self._thread = running
            if parent is not None:
                op.et_parent = parent
        return op

    def _worker_record(self, op: OpenOp, thread: int, end_ns: int) -> None:
        """Hand the finished worker op to the sink: host ET ``thread``, the worker's tid."""
        record = HostOpRecord(
            op.host_id,
            op.parent_host_id,
            op.et_parent,
            op.rf_id,
            op.et_rf_id,
            op.external_id,
            op.ev_idx,
            thread,
            self.tids[GLOO_WORKER_THREAD],
            op.ts_ns,
            end_ns,
            self._step,
            op.action,
            0,
        )
        self.counts["host_ops"] += 1
        self._sink.host_op(record)

    def _await_cpu_collective(self, _action: AwaitCpuCollective) -> None:
        """Block the main thread until the worker's op ended (the wake-up is drawn always,
        so speed factors keep the random sequence); its next op depends on that op."""
        host_id, end = self._cpu_collective_end
        wake = self._cpu_ns(US, 3 * US)
        self.now = max(self.now, end + wake)
        self._inter_thread_src = host_id
