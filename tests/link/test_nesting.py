"""Nesting of one thread's events: parents, innermost lookup, exclusive time."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chakra.ingest.device_model import KinetoEvent
from chakra.link.nesting import ThreadNesting


def event(name: str, ts: int, dur: int) -> KinetoEvent:
    return KinetoEvent(phase="X", category="cpu_op", name=name, ts_us=ts, dur_us=dur)


def test_parents_and_exclusive_time() -> None:
    # outer [0,100] holds a [10,40] (holding c [20,25]) and b [50,60]; d [200,210] is alone
    events = [event("outer", 0, 100), event("a", 10, 30), event("c", 20, 5),
              event("b", 50, 10), event("d", 200, 10)]  # fmt: skip
    nesting = ThreadNesting(events)
    assert nesting.parent == [-1, 0, 1, 0, -1]
    assert nesting.exclusive_us == [60, 25, 5, 10, 10]
    assert [nesting.innermost_at(t) for t in (0, 22, 45, 55, 150, 205, 300)] == [
        0, 2, 0, 3, None, 4, None]  # fmt: skip


@st.composite
def nested_events(draw: st.DrawFn) -> list[KinetoEvent]:
    """Properly nested intervals, built by recursive splitting."""
    out = []
    stack = [(0, draw(st.integers(10, 10_000)), 0)]
    while stack and len(out) < 40:
        start, end, depth = stack.pop()
        a = draw(st.integers(start, end))
        b = draw(st.integers(a, end))
        out.append(event(f"d{depth}", a, b - a))
        if depth < 4 and b > a:
            stack.append((a, b, depth + 1))
        if b < end:
            stack.append((b + 1, end, depth))
    return sorted(out, key=lambda e: (e.ts_us, -e.dur_us))


@settings(max_examples=150, deadline=None)
@given(nested_events(), st.integers(-5, 11_000))
@pytest.mark.slow
def test_innermost_matches_brute_force(events: list[KinetoEvent], instant: int) -> None:
    nesting = ThreadNesting(events)
    containing = [i for i, e in enumerate(events) if e.ts_us <= instant <= e.ts_us + e.dur_us]
    found = nesting.innermost_at(instant)
    if not containing:
        assert found is None
    else:
        assert found in containing
        # nothing containing the instant starts after it or is enclosed by it
        assert all(nesting.starts[i] <= nesting.starts[found] for i in containing)
    assert all(x >= 0 for x in nesting.exclusive_us)
