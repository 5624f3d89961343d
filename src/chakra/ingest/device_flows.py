"""The ``ac2g`` flow events of a Kineto trace, stored by column.

A trace holds two flow events (``s`` at the launch, ``f`` at the GPU op) per launched GPU
op, and nothing in the toolchain reads more of them than how many there are. Kept as one
:class:`~chakra.ingest.device_model.KinetoEvent` each they would be a sixth of a loaded
trace; here each takes a few bytes (a start, an id, an index into the few distinct
phase/category/name/process/thread heads), and an event is built when it is read.

Flows that do not fit columns (a duration, args, a string id, starts mixing integers and
fractions) are kept as events: :meth:`FlowColumns.finish` then gives a plain tuple.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import Any, Optional, Union, overload

from chakra.ingest.device_model import NO_ARGS as _NO_ARGS
from chakra.ingest.device_model import KinetoEvent

Head = tuple[str, str, str, Union[int, str], Union[int, str]]


class FlowEvents(Sequence[KinetoEvent]):
    """Flow events sorted by start (ties in file order), read-only; each item is a new but
    equal :class:`KinetoEvent` (duration 0, no args)."""

    __slots__ = ("_head_of", "_heads", "_ids", "_starts")

    def __init__(self, heads: list[Head], head_of: array, starts: array, ids: array) -> None:
        self._heads = heads
        self._head_of = head_of
        self._starts = starts
        self._ids = ids

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, index: int) -> KinetoEvent: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[KinetoEvent, ...]: ...
    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        phase, category, name, pid, tid = self._heads[self._head_of[index]]
        return KinetoEvent(
            phase, category, name, pid, tid, self._starts[index], 0, self._ids[index], _NO_ARGS
        )

    def __iter__(self) -> Iterator[KinetoEvent]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"FlowEvents({len(self)} flows)"


class FlowColumns:
    """Collects the flow events of a trace in file order, then sorts them. Values go
    straight into arrays, so that the objects decoded for them are freed at once (and their
    memory reused by the next event) rather than all together at the end, which would leave
    holes between the objects kept."""

    __slots__ = ("_events", "_head_of", "_heads", "_ids", "_start_type", "_starts")

    def __init__(self) -> None:
        self._heads: dict[Head, int] = {}
        self._head_of = array("I")
        self._starts = array("d")
        self._start_type: Optional[type] = None  # float or int, from the first flow
        self._ids = array("q")
        self._events: Optional[list[KinetoEvent]] = None  # once some flow does not fit

    def add(self, head: Head, ts_us: Any, dur_us: Any, flow_id: Any, args: Any) -> None:
        if (
            type(ts_us) is self._start_type
            and type(flow_id) is int
            and args is _NO_ARGS
            and type(dur_us) is int
            and dur_us == 0
        ):
            try:
                self._ids.append(flow_id)
            except OverflowError:  # beyond 64 bits
                return self._add_event(head, ts_us, dur_us, flow_id, args)
            try:
                self._starts.append(ts_us)
            except OverflowError:
                self._ids.pop()
                return self._add_event(head, ts_us, dur_us, flow_id, args)
            heads = self._heads
            self._head_of.append(heads.setdefault(head, len(heads)))
        elif self._start_type is None and type(ts_us) in (int, float):
            self._start_type = type(ts_us)
            self._starts = array("d" if self._start_type is float else "q")
            self.add(head, ts_us, dur_us, flow_id, args)
        else:
            self._add_event(head, ts_us, dur_us, flow_id, args)
        return None

    def _add_event(self, head: Head, ts_us: Any, dur_us: Any, flow_id: Any, args: Any) -> None:
        if self._events is None:
            self._events = list(self._as_events())
            self._start_type = type(self)  # no later flow fits columns: all are events now
        self._events.append(KinetoEvent(*head, ts_us, dur_us, flow_id, args))

    def _as_events(self) -> Iterator[KinetoEvent]:
        heads = list(self._heads)
        for head_of, ts_us, flow_id in zip(self._head_of, self._starts, self._ids):
            yield KinetoEvent(*heads[head_of], ts_us, 0, flow_id, _NO_ARGS)

    def finish(self) -> Union[FlowEvents, tuple[KinetoEvent, ...]]:
        """The flows by (start, longest first), ties in file order."""
        if self._events is not None:
            events = self._events
            events.sort(key=lambda e: (e.ts_us, -e.dur_us))
            return tuple(events)
        starts = self._starts.tolist()
        order = sorted(range(len(starts)), key=starts.__getitem__)
        return FlowEvents(
            list(self._heads),
            array("I", map(self._head_of.tolist().__getitem__, order)),
            array(self._starts.typecode, map(starts.__getitem__, order)),
            array("q", map(self._ids.tolist().__getitem__, order)),
        )
