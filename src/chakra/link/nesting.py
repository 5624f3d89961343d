"""Nesting of timed CPU events on one thread: parents, innermost-enclosing lookup, exclusive time.

Events of one thread are sorted into program order (:func:`program_order_key`: start, then
the id the profiler numbered them with, then longest first). A single stack sweep gives each
event its enclosing parent; a binary search plus a walk up that parent chain finds the
innermost event enclosing any instant. Everything is O(n) to build and O(log n + depth) per
query; no nested scans.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Optional, Union

from chakra.ingest.device_model import KinetoEvent

Number = Union[int, float]
NO_PARENT = -1


def program_order_key(event: KinetoEvent) -> tuple[Number, int, Number]:
    """Sort key putting one thread's CPU events in program order.

    Events that start at the same instant are ordered by the id the profiler gave them on
    entry (``Record function id``, else ``External id``: both count up in program order), so
    that a 0 us op recorded before a sibling with the same start stays before it instead of
    being nested inside it. Duration (longest first: an enclosing op before what it encloses)
    only decides between events without ids; an event without an id (an annotation) sorts
    before tied events that have one.
    """
    number = event.rf_id or event.external_id
    return (event.ts_us or 0, number if number is not None else -1, -event.dur_us)


class ThreadNesting:
    """The events of one thread, in program order (:func:`program_order_key`), with their
    nesting.

    ``parent[i]`` is the index of the innermost event that encloses event ``i`` (or
    ``NO_PARENT``); ``exclusive_us[i]`` is its duration minus the time covered by its
    direct children (clipped to it, so partial overlaps never make it negative).
    """

    def __init__(self, events: Sequence[KinetoEvent]) -> None:
        self.events = tuple(events)
        self.starts: list[Number] = [e.ts_us or 0 for e in self.events]
        self.ends: list[Number] = [s + e.dur_us for s, e in zip(self.starts, self.events)]
        self.parent: list[int] = [NO_PARENT] * len(self.events)
        self.exclusive_us: list[Number] = [e.dur_us for e in self.events]
        self._sweep()

    def _sweep(self) -> None:
        stack: list[int] = []
        for index, start in enumerate(self.starts):
            while stack and self.ends[stack[-1]] <= start:
                stack.pop()
            if stack:
                parent = stack[-1]
                self.parent[index] = parent
                covered = min(self.ends[index], self.ends[parent]) - start
                self.exclusive_us[parent] -= max(covered, 0)
            stack.append(index)

    def innermost_at(self, instant: Number) -> Optional[int]:
        """Index of the innermost event with start <= instant <= end, or None."""
        index = bisect_right(self.starts, instant) - 1
        while index >= 0 and self.ends[index] < instant:
            index = self.parent[index]
        return None if index < 0 else index

    def depth(self, index: int) -> int:
        depth = 0
        while self.parent[index] != NO_PARENT:
            index = self.parent[index]
            depth += 1
        return depth

    def ancestors(self, index: int) -> list[int]:
        """Enclosing events of ``index``, innermost first."""
        chain = []
        while self.parent[index] != NO_PARENT:
            index = self.parent[index]
            chain.append(index)
        return chain

    def descendants(self, index: int) -> range:
        """Indices of the events ``index`` encloses (they follow it in program order)."""
        end = index + 1
        while end < len(self.events) and self._inside(end, index):
            end += 1
        return range(index + 1, end)

    def _inside(self, inner: int, outer: int) -> bool:
        while inner != NO_PARENT:
            if inner == outer:
                return True
            inner = self.parent[inner]
        return False
