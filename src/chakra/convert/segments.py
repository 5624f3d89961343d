"""Split each timed host op into segments of its own time, so that the graph replays every
op's measured start and end.

A host op P spans [start, end]. Its children cover parts of that span; what is left is P's
own time, which the converter turns into consecutive CPU nodes ("segments"), cut where the
runtime calls inside P happen: at the start of each launch (its GPU op may start from there)
and at the end of each synchronising call (what follows waits for the GPU). The first segment
keeps P's id (a communication op's last one does, see ``split``); the others get new ids and
``segment_of`` = P. In program order a thread runs
P's first segment, its first child's subtree, P's next segment, and so on.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from typing import Optional, Union

import msgspec

from chakra.convert.et_plus_input import EtPlusNode, Number
from chakra.ingest.device_model import CLOCK_RESOLUTION_US


class Segment(msgspec.Struct, frozen=True, gc=False):
    node_id: int
    op_id: int
    start: Number
    end: Number


Piece = Union[Segment, EtPlusNode]  # a segment of the op, or a child op (its subtree)


class Segmentation:
    """Segments and program-order pieces of every timed host op. ``next_id`` allocates the
    ids of segments after the first."""

    def __init__(self, next_id: int) -> None:
        self.next_id = next_id
        self.segments: dict[int, list[Segment]] = {}
        self.pieces: dict[int, list[Piece]] = {}
        self.extra: list[Segment] = []  # segments with new ids, in creation order
        self._extra_ids = array("q")  # their ids: ascending, as ids are handed out in order
        self.detached: set[int] = set()  # ops replayed beside their thread (graph.py)

    def split(
        self,
        op: EtPlusNode,
        children: Iterable[EtPlusNode],
        cuts: Iterable[Number],
        first: Mapping[int, Optional[Number]],
        anchor_last: bool = False,
        resumes: Optional[Mapping[Number, Number]] = None,
        anchor_at: Optional[Number] = None,
    ):
        """Record ``op``'s segments and pieces (``op`` must be timed). ``children`` come in
        program order; ``first`` gives each child's earliest measured start in its subtree
        (an untimed child starts where its timed descendants do). ``anchor_last``: the op's
        own id goes to its last segment instead of its first (a communication op: its
        last segment is where it completes, which no member of the group can do before
        every member has arrived, so that is where it meets the other ranks). ``resumes``:
        for each synchronising call the op makes, its start -> when it stopped being
        blocked; the segment of the call starts there, so the blocked time is in no node's
        duration (the GPU edge produces it). ``anchor_at`` (with ``anchor_last``): the
        instant a collective's work completed before its record function closed: the
        segment ending then meets instead of the last."""
        start, end = op.ts, op.end
        assert start is not None and end is not None
        points = sorted({t for t in cuts if start < t < end}) if cuts else []
        pieces: list[Piece] = []
        segments: list[Segment] = []
        cursor = start
        for child in children:
            child_start = child.ts if child.ts is not None else first.get(child.id)
            if child_start is not None and child_start > cursor:
                self._own_time(op, cursor, min(child_start, end), points, segments, pieces)
            elif not segments:
                self._own_time(op, cursor, cursor, points, segments, pieces)
            pieces.append(child)
            measured_end = child.end  # a property: read once
            child_end = measured_end if measured_end is not None else cursor
            if measured_end is not None and measured_end > end + CLOCK_RESOLUTION_US:
                child_end = cursor if child_start is None else max(child_start, cursor)  # later
            cursor = max(cursor, min(child_end, end))
        if cursor < end or not segments:
            self._own_time(op, cursor, max(cursor, end), points, segments, pieces)
        if resumes:
            segments, pieces = self._remove_blocked(segments, pieces, resumes)
        if anchor_last and len(segments) > 1:
            segments, pieces = self._anchor_last(op.id, segments, pieces, anchor_at)
        self.segments[op.id] = segments
        self.pieces[op.id] = pieces

    def _remove_blocked(self, segments: list[Segment], pieces: list[Piece], resumes):
        """Each segment that begins where a synchronising call begins starts when the call
        stopped being blocked instead."""
        moved = {}
        for segment in segments:
            resumed = resumes.get(segment.start)
            if resumed is not None and resumed > segment.start:
                moved[id(segment)] = msgspec.structs.replace(
                    segment, start=min(resumed, segment.end)
                )
        if not moved:
            return segments, pieces
        for segment in moved.values():
            self._replace_extra(segment)
        return ([moved.get(id(s), s) for s in segments], [moved.get(id(p), p) for p in pieces])

    def _replace_extra(self, segment: Segment) -> None:
        """Put ``segment`` where the extra segment with its id is (a binary search: ids in
        ``extra`` ascend, and a replacement keeps the id at its place)."""
        self.extra[bisect_left(self._extra_ids, segment.node_id)] = segment

    def _anchor_last(self, op_id: int, segments: list[Segment], pieces: list[Piece], at=None):
        """Give the op's id to its last segment, or the one ending ``at`` (and that
        segment's id to the first)."""
        last = next((s for s in segments if at is not None and s.end == at), segments[-1])
        if last is segments[0]:
            return segments, pieces
        swap = {op_id: last.node_id, last.node_id: op_id}
        renamed = {
            id(s): msgspec.structs.replace(s, node_id=swap.get(s.node_id, s.node_id))
            for s in segments
        }
        first = renamed[id(segments[0])]  # now holds the id the last one had
        self._replace_extra(first)
        return ([renamed[id(s)] for s in segments], [renamed.get(id(p), p) for p in pieces])

    def _own_time(self, op, begin, finish, points, segments, pieces) -> None:
        if not points:  # most ops: no cut inside, so one segment at most
            if not segments or finish != begin:
                self._add(op.id, begin, finish, segments, pieces)
            return
        bounds = [begin, *(t for t in points if begin < t < finish), finish]
        for a, b in zip(bounds, bounds[1:]):
            if not segments or b != a:
                self._add(op.id, a, b, segments, pieces)

    def _add(self, op_id: int, a: Number, b: Number, segments: list, pieces: list) -> None:
        """A segment of the op from ``a`` to ``b``: the first keeps the op's id."""
        node_id = op_id if not segments else self._new_id()
        segment = Segment(node_id, op_id, a, b)
        segments.append(segment)
        pieces.append(segment)
        if node_id != op_id:
            self.extra.append(segment)
            self._extra_ids.append(node_id)

    def _new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    def ending_by(self, op_id: int, instant: Number) -> Optional[int]:
        """The last segment of the op that ends at or before ``instant`` (its first one when
        none does): what a GPU op launched at ``instant`` can follow."""
        segments = self.segments.get(op_id)
        if not segments:
            return None
        ends = [s.end for s in segments]
        index = bisect_right(ends, instant) - 1
        return segments[max(index, 0)].node_id

    def wait_before(self, op_id: int, instant: Number, resumed: Number) -> Optional[int]:
        """The op's segment that ends at ``instant`` (its own time right before a child op
        that started then), now starting at ``resumed`` when the thread was waiting until
        then (for another thread): the wait is left to the edge that explains it. Returns
        the segment's id, or None when the op has no segment ending there."""
        segments = self.segments.get(op_id)
        if not segments:
            return None
        index = bisect_right([s.end for s in segments], instant) - 1
        if index < 0 or segments[index].end != instant:
            return None
        segment = segments[index]
        if segment.start < resumed:
            moved = msgspec.structs.replace(segment, start=min(resumed, segment.end))
            segments[index] = moved
            if moved.node_id != op_id:
                self._replace_extra(moved)
        return segment.node_id

    def containing(self, op_id: int, instant: Number) -> Optional[int]:
        """The op's first segment that ends after ``instant``: the one a synchronising
        call starting at ``instant`` made (its blocked time removed), else what followed."""
        segments = self.segments.get(op_id)
        if not segments:
            return None
        ends = [s.end for s in segments]
        index = bisect_right(ends, instant)
        return segments[index].node_id if index < len(segments) else None

    def last(self, op_id: int) -> int:
        segments = self.segments.get(op_id)
        return segments[-1].node_id if segments else op_id

    def first(self, op_id: int) -> int:
        """The node where the op starts: its first segment (not always the one with its id:
        a host collective gives its id to its last, where it meets the other ranks)."""
        segments = self.segments.get(op_id)
        return segments[0].node_id if segments else op_id

    def anchored(self, op_id: int) -> Optional[Segment]:
        """The segment that carries the op's own id (its first, or its last when anchored
        last), if the op was split."""
        for segment in self.segments.get(op_id, ()):
            if segment.node_id == op_id:
                return segment
        return None


class SyncCall(msgspec.Struct, frozen=True, gc=False):
    """A synchronising call made inside host op ``host``: it ran from ``start`` to ``end``
    and was blocked until ``resumed`` (when the last GPU op it waited for ended, clipped to
    the call): only ``resumed``..``end`` is the call's own time."""

    host: int
    start: Number
    end: Number
    resumed: Number


def cut_points(nodes: Iterable[EtPlusNode], sync_calls: Iterable[SyncCall]):
    """Where each host op's own time is cut: at launches of GPU ops it parents, at the
    start and the end of synchronising calls it encloses."""
    cuts: dict[int, list[Number]] = {}
    for node in nodes:
        launch = node.launch if node.cat is not None else None  # a GPU op (is_gpu, inlined)
        if launch is not None and launch.ts is not None and node.ctrl_deps is not None:
            cuts.setdefault(node.ctrl_deps, []).append(launch.ts)
    for call in sync_calls:
        cuts.setdefault(call.host, []).extend((call.start, call.end))
    return cuts
