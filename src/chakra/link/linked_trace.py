"""Values produced by linking a host ET with a Kineto trace (its evidence, :class:`Edge` of
an :class:`EdgeKind`, is :mod:`chakra.ingest.edges`'s, shared with the ET+ reader)."""

from __future__ import annotations

import enum
from typing import Optional, Union

import msgspec

from chakra.ingest.device_model import DeviceTrace, KinetoEvent
from chakra.ingest.edges import Edge as Edge  # the linker's evidence, re-exported
from chakra.ingest.edges import EdgeKind as EdgeKind
from chakra.ingest.host_model import HostOp, HostTrace

Number = Union[int, float]


class JoinStrategy(str, enum.Enum):
    """How a host op was matched with its Kineto CPU op, in the order they are tried."""

    RECORD_FUNCTION_ID = "record_function_id"  # Kineto "Record function id" == host rf_id
    EXTERNAL_ID = "external_id"  # Kineto "External id" == host rf_id, names equal
    PROGRAM_ORDER = "program_order"  # k-th host op of a thread by id == k-th by External id
    NAME_ALIGNMENT = "name_alignment"  # order-preserving alignment of op names per thread


class GpuLinkStrategy(str, enum.Enum):
    """How a GPU op found the host op that launched it (ET+ ``linked_by``)."""

    CORRELATION = "correlation"  # its launch call (same correlation) ran inside the host op
    EXTERNAL_ID = "external_id"  # no launch call: the CPU op with its External id
    NONE = "none"  # no parent: an orphan, or launched outside the linked window


class WindowChoice(str, enum.Enum):
    """What chose the time window that was linked."""

    PROFILER_STEP = "profiler_step"  # --profiler-step N
    HOST_SPAN = "host_span"  # the span of the Kineto ops matched by id or program order
    ALIGNED_ITERATION = "aligned_iteration"  # the iteration op names align with best


class LinkWindow(msgspec.Struct, frozen=True):
    """The Kineto time span linked, ``start_us`` to ``end_us`` inclusive; ``iteration`` of
    ``candidates`` equally matching iterations (0-based) when several could serve."""

    choice: WindowChoice
    start_us: Number
    end_us: Number
    step: Optional[int] = None  # the ProfilerStep number (PROFILER_STEP)
    iteration: int = 0
    candidates: int = 1

    def contains(self, instant: Number) -> bool:
        return self.start_us <= instant <= self.end_us

    def describe(self) -> str:
        """The window in words, as the report prints and writes it."""
        if self.choice is WindowChoice.PROFILER_STEP:
            return f"ProfilerStep#{self.step}"
        if self.choice is WindowChoice.ALIGNED_ITERATION:
            return (
                f"aligned iteration {self.iteration} of {self.candidates} equally matching, "
                f"starting at ts {self.start_us} us"
            )
        text = f"span of the host ET's ops ({self.start_us} to {self.end_us} us)"
        if self.candidates > 1:
            text += (
                f", iteration {self.iteration} of {self.candidates} matching equally in "
                "program order"
            )
        return text


class LinkOptions(msgspec.Struct, frozen=True):
    """Choices a user can make. ``profiler_step`` restricts linking to that ProfilerStep's
    window (:func:`chakra.ingest.kineto_host.choose_step`); ``iteration`` picks among
    equally good alignment windows (0-based); ``allow_pid_mismatch`` links traces whose
    process ids differ; ``inferred`` False leaves out the dependencies inferred from
    timing."""

    #: a step number, "last", "all"; None: all (a host ET) or the last (Kineto alone)
    profiler_step: Union[int, str, None] = None
    iteration: Optional[int] = None
    allow_pid_mismatch: bool = False
    #: also the dependencies the times show but the trace does not record (link/inferred.py)
    inferred: bool = True


class CpuMatch(msgspec.Struct, frozen=True, gc=False):
    """A host op matched with the Kineto CPU op that recorded its execution."""

    host_id: int
    event: KinetoEvent
    strategy: JoinStrategy
    exclusive_us: Number
    thread: tuple[Union[int, str], Union[int, str]]  # Kineto (pid, tid)


class GpuNode(msgspec.Struct, frozen=True, gc=False):
    """A GPU op (kernel, memcpy, memset) as an ET+ node. ``parent_id`` is the host op that
    launched it; None (with ``orphan_reason``) when no host op could be found, in which
    case the node still keeps its place in its stream's order."""

    node_id: int
    event: KinetoEvent
    parent_id: Optional[int]
    launch: Optional[KinetoEvent]
    linked_by: GpuLinkStrategy
    orphan_reason: Optional[str] = None
    in_window: bool = True  # launched inside the linked window (others are dropped)

    @property
    def stream_key(self) -> tuple[Optional[int], Optional[int]]:
        return (self.event.args.device, self.event.stream)

    @property
    def launch_ts_us(self) -> Number:
        source = self.launch if self.launch is not None else self.event
        return source.ts_us or 0


class LinkReport(msgspec.Struct, frozen=True):
    """Counts that say how complete and how trustworthy the link is (printed and written by
    --report). ``matched`` counts verified matches by strategy and ``rejected`` the matches
    verification refused; ``gpu_ops_linked`` counts GPU ops whose parent is a verified host
    op enclosing the launch; ``contradictions`` counts evidence that disagrees with the
    measured times (edges whose ``dst`` started before ``src`` ended, by kind, and launches
    outside their parent), checked where the converter puts them (a host sync at the end of
    its call, :func:`chakra.link.verify.edge_contradictions`), and left out of ET+ but for
    the launches; ``pageable_copies_not_blocking`` counts copies from or to pageable memory
    whose call returned before the copy ended, by direction (``HtoD``, ``DtoH``): no host
    sync; ``host_ops_on_other_threads`` ran on another thread than their host parent (e.g.
    ``gloo:*`` work on worker threads) and are placed there; ``threads_not_in_host_et`` of
    those threads had no host ET thread (one was made)."""

    host_ops: int
    kineto_cpu_ops: int
    matched: dict[str, int]
    unmatched_host_ops: int
    gpu_ops_total: int
    gpu_ops_linked: int
    gpu_ops_linked_by_external_id: int
    gpu_ops_orphaned: dict[str, int]
    gpu_ops_outside_window: int
    streams: list[int]
    edges: dict[str, int]
    window: Optional[LinkWindow]  # None: the whole trace
    notes: list[str]
    rejected: dict[str, int] = {}
    host_ops_on_other_threads: int = 0
    contradictions: dict[str, int] = {}
    pageable_copies_not_blocking: dict[str, int] = {}
    #: Kineto threads with ops but no thread in the host ET, replayed as threads of their own
    threads_not_in_host_et: int = 0
    #: exact Record-function-id matches kept despite a stale host parent, placed where
    #: Kineto shows them (``ran_under``)
    host_ops_reparented: int = 0
    #: of ``edges``, those inferred from timing (``via`` ``inferred:...``), by kind
    inferred: dict[str, int] = {}
    #: where the host ops came from: ``host_et`` (a recorded host ET) or ``kineto`` (made
    #: from the Kineto trace alone: :mod:`chakra.ingest.kineto_host`), and, for ``kineto``,
    #: what that host side lacks or had to infer
    host_source: str = "host_et"
    host_source_notes: list[str] = []

    @property
    def contradiction_count(self) -> int:
        return sum(self.contradictions.values())

    @property
    def host_coverage(self) -> float:
        considered = self.host_ops
        return sum(self.matched.values()) / considered if considered else 1.0

    @property
    def gpu_coverage(self) -> float:
        considered = self.gpu_ops_total - self.gpu_ops_outside_window
        return self.gpu_ops_linked / considered if considered else 1.0


class RankResult(msgspec.Struct, frozen=True):
    """One rank of a batch link: its report, or the error that stopped it (one sentence)."""

    rank: int
    report: Optional[LinkReport] = None
    error: Optional[str] = None


class LinkedTrace(msgspec.Struct, frozen=True):
    """The result of :func:`chakra.link.link_traces`: everything the ET+ writer needs."""

    host: HostTrace
    device: DeviceTrace
    matches: dict[int, CpuMatch]  # by host op id
    gpu_nodes: tuple[GpuNode, ...]
    edges: tuple[Edge, ...]
    inter_thread_dep: dict[int, int]  # host op id -> host op id it waits for
    idle_gap_us: dict[int, Number]  # top-level host op id -> idle time before it
    sync_dep: dict[int, list[int]]  # host op id -> GPU node ids it waits for
    report: LinkReport
    #: host op id -> (host node it ran under, tid of its thread), where the measured nesting
    #: differs from the host ET's: work that ran on another thread than its host parent (gloo
    #: on its worker threads) and what it enclosed there (link/threads.py)
    ran_under: dict[int, tuple[int, int]] = {}
    #: thread roots made for Kineto threads the host ET has no thread for (written after the
    #: host ops, before the GPU nodes; link/threads.py)
    replay_threads: tuple[HostOp, ...] = ()
