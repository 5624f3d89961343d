"""Dependencies inferred from timing where the trace does not record their cause.

A wait the trace records (a CUPTI ``Stream Wait Event``, a synchronising call, a top-level
hand-off between threads) is evidence; a wait it does not record still shows in the times:
work that starts later than everything it is known to depend on allows, at the very moment
another piece of work ends. Each rule is a sort and a binary search per op (docs/design.md,
"Linking", lists them with their tolerances):

- ``inferred:stream_resume``: a GPU op that started later than its launch and its stream
  allow, as another stream's op ended: an event wait without its ``cuda_sync`` record;
- ``inferred:sync_resume``: a stream or event synchronize whose stream the trace does not
  record waited for the GPU op it returned at (:func:`sync_resume_source`);
- ``inferred:thread_resume``: a nested host op (a child of ``## step N ##``, say) that
  resumed as another thread's op ended: a blocking ``work.wait()``, which records no op;
- ``inferred:early_end``: the same, when the other thread's ``gloo:*`` record function
  closed a little after the resume (the work had completed);
- ``inferred:tail_wait``: an op whose own time after its last child ended as another
  thread's op did;
- ``inferred:thread_wake``: a thread's top-level op after idle time, woken by the op of
  another thread (at any depth) that ended last before it.

Top-level hand-offs have the recorded rule (:func:`chakra.link.evidence.inter_thread_and_gaps`).
Each inferred edge says so in ``via`` (the rule's name); the link report counts them by kind
and ``LinkOptions(inferred=False)`` (``--no-inferred``) leaves them out.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import Optional

from chakra.ingest.device_model import KinetoEvent
from chakra.ingest.edges import EARLY_END, TAIL_WAIT, Edge, EdgeKind, Number
from chakra.link.linked_trace import GpuNode
from chakra.link.nesting import NO_PARENT, ThreadNesting

STREAM_RESUME = "inferred:stream_resume"
THREAD_RESUME = "inferred:thread_resume"
THREAD_WAKE = "inferred:thread_wake"
SYNC_RESUME = "inferred:sync_resume"
#: A CPU backend's collective record function (it may close after its work completed).
HOST_COLLECTIVE_PREFIX = "gloo:"
#: How close (µs) a start must follow the end it is taken to wait for, and how much later
#: than its known dependencies allow it must start, for each rule.
STREAM_TOLERANCE_US = 10.0
#: A thread wakes up slower: the interpreter runs between the wait's return and the next op
#: (30 µs to 2.6 ms on the 2-rank gloo recordings of tests/data/pytorch213/gloo_net; 5.5 ms
#: after a 28.7 ms blocking all_reduce with 4 ranks on 2 cores, waiting for a free core);
#: the thread must have waited ``_WAIT_TO_WAKE`` times longer before that end than after.
THREAD_TOLERANCE_US = 20000.0
_WAIT_TO_WAKE = 4.0
#: The least idle time before a nested host op that can be a wait on another thread.
_MIN_THREAD_WAIT_US = 50.0
#: Float noise of µs timestamps written with 3 decimals: an end this much after a start is
#: the same instant (a kernel started at 354.271 by one ending at 354.2710001).
_SAME_INSTANT_US = 0.001


def is_inferred(edge: Edge) -> bool:
    """Whether ``edge`` was inferred from timing (its ``via`` names the rule)."""
    return edge.via_api is not None and edge.via_api.startswith("inferred:")


def sync_resume_source(call: KinetoEvent, candidates: Sequence[GpuNode]) -> Optional[GpuNode]:
    """``inferred:sync_resume``: of the last ops launched before a stream or event
    synchronize whose stream or event the trace does not record (``candidates``, one per
    stream), the one it waited for: the latest ending at most ``STREAM_TOLERANCE_US``
    before the call returned (and after it began). None when no op's end explains the
    return (the call did not block: every stream is then assumed, as before)."""
    begin, end = call.ts_us or 0, call.end_us
    ending = [n for n in candidates if begin < n.event.end_us <= end + _SAME_INSTANT_US]
    latest = max(ending, key=lambda n: n.event.end_us, default=None)
    if latest is None or end - latest.event.end_us > STREAM_TOLERANCE_US:
        return None
    return latest


def stream_resume_edges(nodes: Sequence[GpuNode], recorded: Iterable[Edge]) -> list[Edge]:
    """``inferred:stream_resume`` edges into GPU ops that have no recorded event wait."""
    waited = {e.dst for e in recorded if e.kind is EdgeKind.EVENT_WAIT}
    by_device: dict = defaultdict(list)
    for node in nodes:
        if node.in_window:  # the others are dropped with their edges
            event = node.event
            row = (event.ts_us or 0, node.node_id, event.end_us, event.stream, node)
            by_device[event.args.device].append(row)
    edges = []
    for rows in by_device.values():
        ends = _Ends(lambda rows=rows: ((row[2], row[3], row[1]) for row in rows))
        previous_end: dict = {}
        rows.sort(key=_START_AND_ID)  # unique node ids: the rows never compare further
        for start, node_id, end, stream, node in rows:
            before = previous_end.get(stream, float("-inf"))
            allowed = max(before, _launch_end(node))
            previous_end[stream] = max(before, end)
            if node_id in waited or start - allowed <= STREAM_TOLERANCE_US:
                continue
            found = ends.latest(start, STREAM_TOLERANCE_US, allowed, stream)
            if found is not None:
                edges.append(Edge(EdgeKind.EVENT_WAIT, found[1], node_id, STREAM_RESUME))
    return edges


def thread_resume_edges(
    nestings: Mapping[tuple, ThreadNesting],
    host_of: Mapping[int, int],
    top: Mapping[tuple, Sequence[tuple[Number, Number, int, bool]]],
    levels: Optional[Mapping[tuple, Levels]] = None,
) -> list[Edge]:
    """``inferred:thread_resume`` edges into nested (not top-level) linked host ops, else
    ``inferred:early_end`` ones (:func:`_early_end`). ``top``: each Kineto thread's
    top-level linked ops as (start, end, host id, _)."""
    ends = _Ends.of_rows(top)
    top_ids = {row[2] for rows in top.values() for row in rows}
    levels = levels if levels is not None else levels_of(nestings, host_of)
    collectives = _collectives(nestings, levels)
    edges = []
    for thread, nesting in nestings.items():
        level = levels[thread]
        for index, host_id in level.linked:
            if host_id in top_ids or nesting.parent[index] == NO_PARENT:
                continue
            start = nesting.starts[index]
            low = level.busy_until[index]
            if start - low <= _MIN_THREAD_WAIT_US:
                continue
            found = ends.latest(start, THREAD_TOLERANCE_US, low, thread)
            # the thread waited much longer before that end than it took to resume
            if found is not None and found[0] - low >= _WAIT_TO_WAKE * (start - found[0]):
                edges.append(Edge(EdgeKind.INTER_THREAD, found[1], host_id, THREAD_RESUME))
                continue
            early = _early_end(collectives, start, low, thread)
            if early is not None:
                edges.append(Edge(EdgeKind.INTER_THREAD, early, host_id, EARLY_END,
                                  via_ts_us=start))  # fmt: skip
    return edges


def _collectives(nestings: Mapping[tuple, ThreadNesting], levels: Mapping[tuple, Levels]) -> list:
    """The top-level ``gloo:*`` ops of every thread as (end, start, thread, host id), by
    end."""
    out = []
    for thread, nesting in nestings.items():
        for index, host_id in levels[thread].linked:
            top = nesting.parent[index] == NO_PARENT
            if top and nesting.events[index].name.startswith(HOST_COLLECTIVE_PREFIX):
                out.append((nesting.ends[index], nesting.starts[index], thread, host_id))
    return sorted(out)


def _early_end(collectives: list, start: Number, low: Number, own: object) -> Optional[int]:
    """``inferred:early_end``: a thread idle since ``low`` that resumed at ``start`` while
    another thread's collective (a ``gloo:*`` record function) was still open, closing
    within ``THREAD_TOLERANCE_US`` after, and had been running 4 times longer before it
    than after, waited for that collective: gloo closes the record function a while after
    the work completed and the waiting thread was woken (2 ms on the real recordings). The
    edge carries ``start`` (``via_ts``): the collective is taken to have completed then."""
    k = bisect_right(collectives, (start, float("inf")))
    while k < len(collectives) and collectives[k][0] - start <= THREAD_TOLERANCE_US:
        end, began, thread, host_id = collectives[k]
        late = end - start
        waited = min(start - low, start - began)
        if thread != own and waited >= _WAIT_TO_WAKE * late:
            return host_id
        k += 1
    return None


def tail_wait_edges(
    nestings: Mapping[tuple, ThreadNesting],
    host_of: Mapping[int, int],
    top: Mapping[tuple, Sequence[tuple[Number, Number, int, bool]]],
    levels: Optional[Mapping[tuple, Levels]] = None,
) -> list[Edge]:
    """``inferred:tail_wait`` edges: a linked host op whose own time after its last child
    lasted more than 50 µs and ended within ``THREAD_TOLERANCE_US`` of the end of another
    thread's top-level op, having waited 4 times longer before that end than after it,
    waited for that op in that stretch (a ``## log_metrics ##`` annotation closing a
    blocking collective: the wait is the end of its own time). ``dst`` is the op; the edge
    reaches its last stretch only (the converter's last segment), so it is exempt from the
    start-before-end check (its end is after ``src``'s by construction)."""
    ends = _Ends.of_rows(top)
    levels = levels if levels is not None else levels_of(nestings, host_of)
    edges = []
    for thread, nesting in nestings.items():
        last_child_end = levels[thread].last_child_end
        for index, host_id in levels[thread].linked:
            low = last_child_end.get(index)
            end = nesting.ends[index]
            if low is None or end - low <= _MIN_THREAD_WAIT_US:
                continue
            found = ends.latest(end, THREAD_TOLERANCE_US, low, thread)
            if found is not None and found[0] - low >= _WAIT_TO_WAKE * (end - found[0]):
                edges.append(Edge(EdgeKind.INTER_THREAD, found[1], host_id, TAIL_WAIT))
    return edges


def thread_wake_edges(
    ops: Mapping[tuple, Sequence[tuple[Number, Number, int, bool]]],
    recorded: Iterable[Edge],
    steps: Collection[int] = (),
) -> list[Edge]:
    """``inferred:thread_wake`` edges into top-level host ops: each Kineto thread's first
    op, or one after more than 50 µs idle, depends on the linked op of another thread (at
    any depth) that ended last before it started, within its idle time, unless that is a
    recorded hand-off already (which looks at other threads' top-level ops only). ``ops``:
    every linked op per Kineto thread as (start, end, host id, top-level). A gloo worker is
    woken by work enqueued inside ``c10d::allreduce_`` on the main thread, which may sit
    inside ``## step N ##`` or ``## log_metrics ##``: no top-level op ended then. ``steps``:
    the ``ProfilerStep#N`` ops, never a cause (a step's end only marks the profiler's)."""
    reached = {(e.src, e.dst) for e in recorded if e.kind is EdgeKind.INTER_THREAD}
    ends = _Ends.of_rows(ops, skip=steps)
    edges = []
    for thread, rows in ops.items():
        previous_end: Optional[Number] = None
        for start, end, host_id, top in rows:
            if not top:
                continue
            low = float("-inf") if previous_end is None else previous_end
            if start - low > _MIN_THREAD_WAIT_US:
                found = ends.latest(start, float("inf"), low, thread)
                if found is not None and (found[1], host_id) not in reached:
                    edges.append(Edge(EdgeKind.INTER_THREAD, found[1], host_id, THREAD_WAKE))
            previous_end = end if previous_end is None else max(previous_end, end)
    return edges


class Levels:
    """What the host rules read of one thread, in one pass in program order: its linked
    events as (index, host id); per event when the thread was last busy at its level before
    it (``busy_until``: the latest end of an earlier sibling, else its parent's start); per
    parent the end of its last child (``last_child_end``)."""

    __slots__ = ("_hosts", "_indices", "busy_until", "last_child_end")

    def __init__(self, nesting: ThreadNesting, host_of: Mapping[int, int]) -> None:
        starts, ends, parents = nesting.starts, nesting.ends, nesting.parent
        # two columns, not a tuple per event: the levels were the link's peak memory
        self._indices, self._hosts = array("l"), []
        for i, event in enumerate(nesting.events):
            host_id = host_of.get(id(event))
            if host_id is not None:
                self._indices.append(i)
                self._hosts.append(host_id)
        last: dict[int, Number] = {}
        busy = []
        for index, start in enumerate(starts):
            parent = parents[index]
            if parent == NO_PARENT:
                busy.append(start)
                continue
            busy.append(last.get(parent, starts[parent]))
            end = ends[index]
            if end > last.get(parent, start):
                last[parent] = end
            else:
                last.setdefault(parent, start)
        self.busy_until = busy
        self.last_child_end = last

    @property
    def linked(self) -> Iterator[tuple[int, int]]:
        """Its linked events as (index, host id), in program order."""
        return zip(self._indices, self._hosts)


def levels_of(
    nestings: Mapping[tuple, ThreadNesting], host_of: Mapping[int, int]
) -> dict[tuple, Levels]:
    """:class:`Levels` of every thread (computed once, shared by the host rules)."""
    return {thread: Levels(nesting, host_of) for thread, nesting in nestings.items()}


class _Ends:
    """Ops by their end: (end, where it ran, id) sorted, for the latest end before an
    instant (binary search). Sorted when first searched: on most traces few ops (none on
    many) are late enough for a rule to look, so building every rule's list up front was
    most of the rules' cost."""

    def __init__(self, ends: Callable[[], Iterable[tuple[Number, object, int]]]) -> None:
        self._source: Optional[Callable[[], Iterable[tuple[Number, object, int]]]] = ends
        self.ends: list[tuple[Number, object, int]] = []
        self.times: list[Number] = []

    @classmethod
    def of_rows(cls, rows: Mapping[tuple, Sequence[tuple]], skip: Collection[int] = ()) -> _Ends:
        """From rows (start, end, host id, ...) per thread, leaving out the ids in ``skip``
        (neither is changed before the last search)."""
        return cls(lambda: ((row[1], thread, row[2]) for thread, rows_ in rows.items()
                            for row in rows_ if row[2] not in skip))  # fmt: skip

    def latest(
        self, start: Number, tolerance: float, after: Number, own: object
    ) -> Optional[tuple[Number, int]]:
        """(end, id) of the op not on ``own`` whose end is the latest in (``after``,
        ``start``] (to the same instant), when that end is within ``tolerance`` of
        ``start``."""
        if self._source is not None:
            self.ends = sorted(self._source())
            self.times = [e[0] for e in self.ends]
            self._source = None
        times = self.times
        k = bisect_right(times, start + _SAME_INSTANT_US) - 1
        while k >= 0 and times[k] > after and start - times[k] <= tolerance:
            if self.ends[k][1] != own:
                return times[k], self.ends[k][2]
            k -= 1
        return None


_START_AND_ID = itemgetter(0, 1)


def _launch_end(node: GpuNode) -> Number:
    return node.launch.end_us if node.launch is not None else float("-inf")
