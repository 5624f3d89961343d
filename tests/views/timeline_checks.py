"""Checks of a Chrome/Perfetto JSON trace read from its raw events, written apart from the
code that writes the trace (:mod:`chakra.views.timeline`)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

#: µs: ts and dur are written with nanosecond precision
EPSILON_US = 1e-6


def improperly_nested(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The complete (``X``) slices that start inside another slice of their (pid, tid)
    track but end after it."""
    tracks: dict[tuple, list[tuple[float, float, int]]] = defaultdict(list)
    for k, event in enumerate(events):
        if event["ph"] == "X":
            tracks[event["pid"], event["tid"]].append((event["ts"], event["ts"] + event["dur"], k))
    bad = []
    for slices in tracks.values():
        slices.sort(key=lambda s: (s[0], -s[1]))
        ends: list[float] = []
        for begin, end, k in slices:
            while ends and ends[-1] <= begin + EPSILON_US:
                ends.pop()
            if ends and end > ends[-1] + EPSILON_US:
                bad.append(events[k])
                continue
            ends.append(end)
    return bad


def names(events: list[dict[str, Any]], kind: str) -> dict[Any, str]:
    """``process_name`` (pid -> name) or ``thread_name`` ((pid, tid) -> name) metadata."""
    out = {}
    for event in events:
        if event["ph"] == "M" and event["name"] == kind:
            key = event["pid"] if kind == "process_name" else (event["pid"], event["tid"])
            out[key] = event["args"]["name"]
    return out


def flows(events: list[dict[str, Any]]) -> dict[int, tuple[dict, dict]]:
    """Flow id -> its (start, finish) events; raises AssertionError for an id without both."""
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts.keys() == finishes.keys()
    return {i: (starts[i], finishes[i]) for i in starts}
