"""The program-order join: the k-th host op of a thread is the k-th Kineto op of that thread.

Host ET node ids and Kineto ``External id`` numbers both count up as ops are entered, so on
one thread, sorting host ops by id and Kineto ops by External id gives the same sequence of
names even when the two numberings are unrelated (1.0.1-era traces without ``Record function
id``). The Kineto trace may hold more than the host ET (other steps), so each host thread is
placed at the offset into its Kineto thread where the most names agree; only pairs whose names
agree are kept. Nothing is ordered by time or duration here, so ops that start at the same
instant (a 0 us op next to its sibling) cannot swap.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Optional, Union

import msgspec

from chakra.errors import ChakraError
from chakra.ingest.device_model import KinetoEvent
from chakra.ingest.host_model import HostOp
from chakra.link.alignment import candidate_starts

ThreadKey = tuple[Union[int, str], Union[int, str]]
#: A thread's placement serves when at least this share of its host ops agree by name.
MIN_AGREEMENT = 0.9


class ProgramOrderJoin(msgspec.Struct, frozen=True):
    """Matched pairs (host op id -> Kineto event), the time span of the first thread's
    matches (the linked iteration), and notes on choices made."""

    matches: dict[int, KinetoEvent]
    span: Optional[tuple[float, float]]
    notes: tuple[str, ...] = ()
    choice: tuple[int, int] = (0, 1)  # (iteration linked, iterations matching equally)


class _Placement(msgspec.Struct, frozen=True):
    thread: ThreadKey
    events: tuple[KinetoEvent, ...]
    offset: int
    score: int
    ties: int  # offsets that score as well


def join_by_program_order(
    ops: Sequence[HostOp], events: Sequence[KinetoEvent], iteration: Optional[int]
) -> ProgramOrderJoin:
    """Place every host thread (ops by id) in a Kineto thread (ops by External id).

    The thread that recorded first (smallest host id) chooses the iteration: when several
    offsets agree equally (a Kineto trace of many identical steps), ``iteration`` picks one
    (default the first, with a note); the other threads are placed among Kineto ops that
    start inside the chosen iteration's span.
    """
    host_threads: dict[int, list[HostOp]] = defaultdict(list)
    for op in sorted(ops, key=lambda o: o.id):
        host_threads[op.tid].append(op)
    kineto_threads: dict[ThreadKey, list[KinetoEvent]] = defaultdict(list)
    for event in events:
        if event.external_id is not None:
            kineto_threads[(event.pid, event.tid)].append(event)
    for thread_events in kineto_threads.values():
        thread_events.sort(key=lambda e: e.external_id or 0)
    matches: dict[int, KinetoEvent] = {}
    notes: list[str] = []
    span: Optional[tuple[float, float]] = None
    used: set[ThreadKey] = set()
    choice = (0, 1)
    for tid in sorted(host_threads, key=lambda t: host_threads[t][0].id):
        host_ops = host_threads[tid]
        names = [op.name for op in host_ops]
        placement = _best_placement(
            names, kineto_threads, used, span, iteration if span is None else None
        )
        if placement is None or placement.score < MIN_AGREEMENT * len(host_ops):
            continue
        if span is None:
            choice = (iteration or 0, placement.ties)
        if span is None and placement.ties > 1 and iteration is None:
            notes.append(
                f"{placement.ties} Kineto iterations match the host ET equally well in "
                "program order; linked the first (choose another with --iteration N)"
            )
        used.add(placement.thread)
        paired = _pairs(host_ops, placement)
        matches.update(paired)
        if span is None and paired:
            span = (
                min(e.ts_us or 0 for e in paired.values()),
                max(e.end_us for e in paired.values()),
            )
    return ProgramOrderJoin(matches=matches, span=span, notes=tuple(notes), choice=choice)


def _pairs(host_ops: Sequence[HostOp], placement: _Placement) -> dict[int, KinetoEvent]:
    events, offset = placement.events, placement.offset
    return {
        op.id: events[offset + k]
        for k, op in enumerate(host_ops)
        if offset + k < len(events) and events[offset + k].name == op.name
    }


def _score(names: Sequence[str], kineto_names: Sequence[str], offset: int) -> int:
    return sum(1 for a, b in zip(names, kineto_names[offset:]) if a == b)


def _best_placement(names, kineto_threads, used, span, iteration) -> Optional[_Placement]:
    """The (thread, offset) where the most host names agree; ``iteration`` picks among
    offsets that agree equally on the best thread."""
    best: Optional[_Placement] = None
    best_offsets: list[int] = []
    for thread, thread_events in kineto_threads.items():
        if thread in used:
            continue
        if span is not None:  # secondary threads: stay inside the chosen iteration
            thread_events = [e for e in thread_events if span[0] <= (e.ts_us or 0) <= span[1]]
        kineto_names = [e.name for e in thread_events]
        offsets = candidate_starts(names, kineto_names) or ([0] if kineto_names else [])
        scored = [(_score(names, kineto_names, offset), offset) for offset in offsets]
        if not scored:
            continue
        top = max(score for score, _ in scored)
        if top and (best is None or top > best.score):
            tied = [offset for score, offset in scored if score == top]
            best = _Placement(thread, tuple(thread_events), tied[0], top, len(tied))
            best_offsets = tied
    if best is None:
        return None
    pick = iteration or 0
    if pick >= len(best_offsets):
        raise ChakraError(f"--iteration {pick}: only {len(best_offsets)} equally good windows")
    return msgspec.structs.replace(best, offset=best_offsets[pick])
