"""Typed values passed between the program, the timing engine and the writers.

*Actions* (timing-free, from :mod:`chakra.synth.program`) say what a rank does; *records*
(from :mod:`chakra.synth.timing`) say when it happened. Times in records are integer
nanoseconds on the job's clock; writers convert them once, to microseconds.
"""

from __future__ import annotations

from typing import Optional

import msgspec

# --- Collectives ------------------------------------------------------------------------------


class ProcessGroup(msgspec.Struct, frozen=True):
    """A process group: name as PyTorch numbers them, description, member ranks."""

    name: str
    desc: str
    ranks: tuple[int, ...]
    stream: int


class CollectiveCall(msgspec.Struct, frozen=True, gc=False):
    """One collective (or one send/recv pair) as every member rank issues it.

    ``kind`` is this rank's view (``send``/``recv`` for point-to-point); ``job_kind`` the
    job's (``send_recv`` for a pair). ``seq`` counts operations per process group from 0.
    ``ranks`` lists the participants (sender first for a pair). ``transfer_ns`` is the time
    from the last participant's start to the common end.
    """

    kind: str
    job_kind: str
    pg: ProcessGroup
    seq: int
    ranks: tuple[int, ...]
    in_nelems: int
    out_nelems: int
    transfer_ns: int
    itemsize: int = 4

    @property
    def key(self) -> tuple[str, int]:
        return (self.pg.name, self.seq)

    @property
    def nbytes(self) -> int:
        return self.in_nelems * self.itemsize


# --- Actions ----------------------------------------------------------------------------------


class OpBegin(msgspec.Struct, frozen=True, gc=False):
    """Enter a host op. ``seq`` is its autograd sequence number (-1: none); ``backward_of``
    the sequence number of the forward op a backward node belongs to (-1: not backward);
    ``step`` >= 0 marks a ``ProfilerStep#`` annotation; ``stale_parent``: the host ET files
    the op under the step's last ended autograd ``evaluate_function`` (``stale_host_parents``)."""

    name: str
    cat: str = "cpu_op"
    schema: str = ""
    inputs: tuple = ()
    seq: int = -1
    backward_of: int = -1
    fwd_thread: int = -1
    scope: int = 0
    comm: Optional[CollectiveCall] = None
    step: int = -1
    flow_start: bool = False
    flow_end: bool = False
    stale_parent: bool = False


class OpEnd(msgspec.Struct, frozen=True, gc=False):
    """Leave the innermost open host op."""


class Gap(msgspec.Struct, frozen=True, gc=False):
    """Idle CPU time on the current thread, drawn uniformly from [low_ns, high_ns]."""

    low_ns: int
    high_ns: int


class Launch(msgspec.Struct, frozen=True, gc=False):
    """A runtime call that enqueues one GPU op (kernel, copy or memset) on ``stream``.

    ``blocking`` copies (cudaMemcpy) return only when the copy is done.
    """

    api: str
    category: str
    name: str
    stream: int
    base_ns: int
    nbytes: int = 0
    collective: Optional[CollectiveCall] = None
    blocking: bool = False


class EventRecord(msgspec.Struct, frozen=True, gc=False):
    """cudaEventRecord of program event ``event`` on ``stream``."""

    stream: int
    event: int


class StreamWait(msgspec.Struct, frozen=True, gc=False):
    """cudaStreamWaitEvent: ``stream`` waits for program event ``event``."""

    stream: int
    event: int


class StreamSync(msgspec.Struct, frozen=True, gc=False):
    """cudaStreamSynchronize: the thread waits for everything enqueued on ``stream``."""

    stream: int


class DeviceSync(msgspec.Struct, frozen=True, gc=False):
    """cudaDeviceSynchronize: the thread waits for every stream of the device."""


class EventSync(msgspec.Struct, frozen=True, gc=False):
    """cudaEventSynchronize: the thread waits for program event ``event``."""

    event: int


class SwitchThread(msgspec.Struct, frozen=True, gc=False):
    """Hand the CPU to ``thread`` (0 forward/main, 1 autograd, 2 data loader) after an idle
    gap; the hand-over is an inter-thread dependency."""

    thread: int
    low_ns: int
    high_ns: int


class CpuCollective(msgspec.Struct, frozen=True, gc=False):
    """Right after the main thread's ``c10d::`` op returned: the gloo worker thread wakes and
    runs ``gloo:<op>`` (around an ``aten::view``) until every member rank has joined plus the
    transfer. The main thread goes on at once (the ``c10d::`` op was its last top-level op),
    or with ``blocking`` (``async_op=False``) waits, inside the op enclosing the ``c10d::``
    op, until the worker's op ended."""

    call: CollectiveCall
    name: str
    blocking: bool = False


class AwaitCpuCollective(msgspec.Struct, frozen=True, gc=False):
    """The main thread blocks until the last handed-off CPU collective has ended; its next
    host op depends on that collective's worker op (an inter-thread dependency)."""


# --- Records ----------------------------------------------------------------------------------


class HostOpRecord(msgspec.Struct, frozen=True, gc=False):
    """A finished host op. ``host_id`` is its host ET node id (None: not in the host ET);
    ``et_rf_id`` the rf_id written in the host ET, ``rf_id`` the record-function id Kineto
    knows (equal in every vintage but legacy). ``thread`` is the host ET thread (0 main,
    1 autograd, 2 data loader, 3 gloo worker), ``tid`` the OS thread that ran it (they differ
    for a ``gloo:`` op, filed under the main thread's ``c10d::`` op)."""

    host_id: Optional[int]
    parent_host_id: Optional[int]
    et_parent: int
    rf_id: int
    et_rf_id: Optional[int]
    external_id: int
    ev_idx: int
    thread: int
    tid: int
    ts_ns: int
    end_ns: int
    step: int
    action: OpBegin
    fw_parent: int


class HostWaitRecord(msgspec.Struct, frozen=True, gc=False):
    """Time a host thread (OS ``tid``) spent blocked in no op, inside op ``parent`` (its self
    time), until op ``waited_for`` (on another thread) ended; ops given by their external id
    and host ET id (None: not in the host ET)."""

    tid: int
    ts_ns: int
    end_ns: int
    step: int
    parent_external_id: int
    parent_host_id: Optional[int]
    waited_for_external_id: int
    waited_for_host_id: Optional[int]


class RuntimeRecord(msgspec.Struct, frozen=True, gc=False):
    """A CUDA runtime/driver call on a host thread."""

    correlation: int
    name: str
    tid: int
    ts_ns: int
    end_ns: int
    external_id: int
    host_id: Optional[int]
    stream: Optional[int]


class GpuRecord(msgspec.Struct, frozen=True, gc=False):
    """A GPU op; ``launch`` is the runtime call that enqueued it (same correlation)."""

    correlation: int
    name: str
    category: str
    stream: int
    device: int
    ts_ns: int
    end_ns: int
    external_id: int
    parent_host_id: Optional[int]
    launch: RuntimeRecord
    nbytes: int
    collective: Optional[CollectiveCall]


class SyncRecord(msgspec.Struct, frozen=True, gc=False):
    """A ``cuda_sync`` event as CUPTI reports it (shares the sync call's correlation)."""

    kind: str
    call: RuntimeRecord
    stream: int
    wait_on_stream: int
    record_correlation: int
    event_id: int
    device: int


class EtNode(msgspec.Struct, frozen=True, gc=False):
    """A host ET node with no Kineto counterpart: process/thread roots, pg init."""

    host_id: int
    name: str
    parent: int
    et_rf_id: int
    et_tid: int
    scope: int
    inputs: tuple = ()


class RankIdentity(msgspec.Struct, frozen=True):
    """Who a rank is in its traces: OS pid and (main, autograd[, data loader, gloo worker])
    tids, GPU, clock start."""

    rank: int
    pid: int
    tids: tuple[int, ...]
    device: int
    start_ns: int
    groups: tuple[ProcessGroup, ...]
    streams: tuple[int, ...]
