"""Order-preserving alignment of host ops with Kineto CPU ops by name, for traces whose ids
do not join (schema 1.0.1 era). The host ET may hold one iteration while the Kineto trace
holds many: every place where the host sequence could start is scored and the best kept."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import msgspec

ANCHOR_LENGTH = 8  # names that must agree for a window to be a candidate
LOOKAHEAD = 32  # Kineto ops that may be skipped to resynchronise


class Alignment(msgspec.Struct, frozen=True):
    """Pairs ``(host_index, kineto_index)`` of one candidate window, and its score."""

    start: int
    pairs: tuple[tuple[int, int], ...]

    @property
    def score(self) -> int:
        return len(self.pairs)


def align_from(host: Sequence[str], kineto: Sequence[str], start: int) -> Alignment:
    """Greedy two-pointer alignment of ``host`` against ``kineto[start:]``: equal names
    match; a Kineto op that the host ET lacks is skipped when the host name reappears
    within ``LOOKAHEAD`` ops; otherwise the host op is left unmatched. O(len(host) * L)."""
    pairs = []
    i, j = 0, start
    while i < len(host) and j < len(kineto):
        if host[i] == kineto[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
            continue
        ahead = _find(kineto, host[i], j + 1, j + 1 + LOOKAHEAD)
        if ahead is None:
            i += 1
        else:
            j = ahead
    return Alignment(start=start, pairs=tuple(pairs))


def _find(names: Sequence[str], name: str, begin: int, end: int) -> Optional[int]:
    for index in range(begin, min(end, len(names))):
        if names[index] == name:
            return index
    return None


def candidate_starts(host: Sequence[str], kineto: Sequence[str]) -> list[int]:
    """Positions where the first ``ANCHOR_LENGTH`` host names appear in a row (one pass
    with a dictionary of anchors, not a scan per position)."""
    length = min(ANCHOR_LENGTH, len(host))
    if length == 0:
        return []
    anchor = tuple(host[:length])
    first = anchor[0]
    return [
        p
        for p in range(len(kineto) - length + 1)
        if kineto[p] == first and tuple(kineto[p : p + length]) == anchor
    ]


class BestWindows(msgspec.Struct, frozen=True):
    """The candidate windows (start positions in the Kineto names) whose alignments score
    best, in trace order; :func:`align_from` gives a window's pairs."""

    score: int
    starts: tuple[int, ...]


def best_windows(host: Sequence[str], kineto: Sequence[str]) -> Optional[BestWindows]:
    """The best-scoring candidate windows, or None when nothing aligns. Each candidate's
    pairs are dropped once scored: a Kineto trace of many iterations has thousands of
    candidates, and keeping them all cost more memory than the trace itself."""
    starts = candidate_starts(host, kineto)
    if not starts:
        score = align_from(host, kineto, 0).score
        return BestWindows(score, (0,)) if score else None
    best, chosen = 0, []
    for start in starts:
        score = align_from(host, kineto, start).score
        if score > best:
            best, chosen = score, [start]
        elif score == best:
            chosen.append(start)
    return BestWindows(best, tuple(chosen)) if best else None
