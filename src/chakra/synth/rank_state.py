"""Per-rank state the timing engine keeps: identity, open ops, streams, events, the sink.

Small mutable holders (``OpenOp``, ``StreamState``, ``EventState``) live only inside a
:class:`~chakra.synth.timing.RankEngine`; everything that leaves the engine is a frozen record.
"""

from __future__ import annotations

from typing import Protocol

import msgspec

from chakra.synth.program import US, JobPlan
from chakra.synth.records import (
    CollectiveCall,
    EtNode,
    GpuRecord,
    HostOpRecord,
    HostWaitRecord,
    OpBegin,
    RankIdentity,
    RuntimeRecord,
    SyncRecord,
)
from chakra.synth.vocabulary import (
    COMPUTE_STREAM,
    COPY_STREAM,
    DEFAULT_PG_STREAM,
    GPUS_PER_NODE,
    SUBGROUP_STREAM,
)

JOB_START_NS = 1_700_000_000_000  # ns; 1.7e9 µs keeps 3-decimal µs floats exact
CORRELATION_BASE = 10_000


class RankSink(Protocol):
    """Where the engine hands finished records (the rank's writers)."""

    def host_op(self, record: HostOpRecord) -> None: ...
    def host_wait(self, record: HostWaitRecord) -> None: ...
    def et_node(self, node: EtNode) -> None: ...
    def runtime(self, record: RuntimeRecord) -> None: ...
    def gpu(self, record: GpuRecord) -> None: ...
    def sync(self, record: SyncRecord) -> None: ...
    def edge(self, kind: str, src: str, dst: str) -> None: ...


class CollectiveArrival(msgspec.Struct, frozen=True, gc=False):
    """A rank's NCCL kernel for ``call`` (with ``cpu``: its gloo worker op, ``correlation``
    0) can start at ``start_ns``; the engine waits to be sent the collective's common end
    time."""

    call: CollectiveCall
    rank: int
    start_ns: int
    correlation: int
    cpu: bool = False


class OpenOp:
    """A host op that has begun and not yet ended (mutable while open)."""

    __slots__ = ("action", "et_parent", "et_rf_id", "ev_idx", "external_id", "host_id",
                 "parent_host_id", "rf_id", "ts_ns")  # fmt: skip

    def __init__(self, action: OpBegin, ts_ns: int) -> None:
        self.action = action
        self.ts_ns = ts_ns


class StreamState:
    """What the engine knows about a GPU stream: its last op and pending event waits."""

    __slots__ = ("last_correlation", "last_end_ns", "waits")

    def __init__(self) -> None:
        self.last_correlation = 0
        self.last_end_ns = 0
        self.waits: list[tuple[int, int]] = []  # (src correlation, src end) for the next op


class EventState:
    """A recorded CUDA event: its stream, the record call and the GPU op before it."""

    __slots__ = ("cuda_id", "record_correlation", "src_correlation", "src_end_ns", "stream")

    def __init__(self, stream: int, record_correlation: int, cuda_id: int, src: StreamState):
        self.stream = stream
        self.record_correlation = record_correlation
        self.cuda_id = cuda_id
        self.src_correlation = src.last_correlation
        self.src_end_ns = src.last_end_ns


def rank_identity(plan: JobPlan, rank: int) -> RankIdentity:
    """The pid, tids, device and clock start of ``rank`` (pure)."""
    seed = plan.options.seed
    pid = 1_000 + (seed * 7_919 + rank * 104_729) % 4_000_000
    tids: tuple[int, ...] = (pid, pid + 9 + rank % 5)
    if plan.options.gloo_worker:
        tids += (pid + 17 + rank % 3, pid + 23 + rank % 4)
    return RankIdentity(
        rank=rank,
        pid=pid,
        tids=tids,
        device=rank % GPUS_PER_NODE,
        start_ns=JOB_START_NS + (seed % 1000) * 1_000 * US,
        groups=plan.groups,
        streams=(COMPUTE_STREAM, COPY_STREAM, DEFAULT_PG_STREAM, SUBGROUP_STREAM),
    )


def rank_seed(seed: int, rank: int) -> int:
    """The seed of ``rank``'s random durations (independent of other ranks)."""
    return (seed * 1_000_003 + rank * 7_919 + 17) % (2**63)
