"""A stretch of time a timeline shows (``--timeline-window``): a range of the timeline's
own clock (µs since the replay's origin, as Perfetto shows it) or of training steps (the
``ProfilerStep#N`` host ops: from the first start of the first step to the last end of the
last, over the ranks shown)."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any, Optional

import msgspec

from chakra.errors import ChakraError, UsageError
from chakra.simulate.sim_result import SimResult
from chakra.views.steps import step_nodes

_RANGE = re.compile(r"(\d+(?:\.\d*)?)-(\d+(?:\.\d*)?)")
_STEPS = re.compile(r"step:(\d+)(?:-(\d+))?")


class WindowChoice(msgspec.Struct, frozen=True):
    """What ``--timeline-window`` asked for: ``begin_us``-``end_us``, or steps
    ``first_step``-``last_step`` (both None for a time range)."""

    begin_us: float = 0.0
    end_us: float = 0.0
    first_step: Optional[int] = None
    last_step: Optional[int] = None

    @classmethod
    def parse(cls, text: str) -> WindowChoice:
        """``A-B`` (µs, A < B) or ``step:N`` / ``step:N-M``; UsageError otherwise."""
        steps = _STEPS.fullmatch(text)
        if steps:
            first = int(steps.group(1))
            last = int(steps.group(2)) if steps.group(2) is not None else first
            if last >= first:
                return cls(first_step=first, last_step=last)
        times = _RANGE.fullmatch(text)
        if times and float(times.group(1)) < float(times.group(2)):
            return cls(float(times.group(1)), float(times.group(2)))
        raise UsageError(
            f"--timeline-window {text!r}: a time range in µs (1000-5000) or steps (step:3, "
            "step:3-5)"
        )


class TimeWindow(msgspec.Struct, frozen=True):
    """A stretch of the timeline's clock, µs."""

    begin_us: float
    end_us: float


def resolve_window(
    choice: WindowChoice, result: SimResult, shown: Optional[Collection[int]] = None
) -> TimeWindow:
    """The stretch ``choice`` names in ``result`` (``shown``: the graph positions whose steps
    count; None: all). ChakraError when no rank shown has those steps."""
    if choice.first_step is None or choice.last_step is None:
        return TimeWindow(choice.begin_us, choice.end_us)
    wanted = range(choice.first_step, choice.last_step + 1)
    begins, ends = [], []
    for r, graph in enumerate(result.graphs):
        if shown is not None and r not in shown:
            continue
        for step, nodes in step_nodes(graph.names).items():
            if step in wanted:
                begins += [result.start[r][node] for node in nodes]
                ends += [result.end[r][node] for node in nodes]
    if not begins:
        raise ChakraError(
            f"--timeline-window step:{choice.first_step}-{choice.last_step}: no "
            "ProfilerStep#N host op of those steps in the ranks shown"
        )
    return TimeWindow(min(begins), max(ends))


def within(events: Sequence[dict[str, Any]], window: TimeWindow) -> list[dict[str, Any]]:
    """The events of a Chrome trace that belong in ``window``: metadata, slices that overlap
    it, and flows whose two ends are both inside it (a flow is a start and a finish event
    with one id, next to each other)."""
    lo, hi = window.begin_us, window.end_us
    out: list[dict[str, Any]] = []
    index = 0
    while index < len(events):
        event = events[index]
        phase = event["ph"]
        if phase == "s" and index + 1 < len(events) and events[index + 1]["ph"] == "f":
            finish = events[index + 1]
            if lo <= event["ts"] <= hi and lo <= finish["ts"] <= hi:
                out += (event, finish)
            index += 2
            continue
        if phase != "X" or (event["ts"] <= hi and event["ts"] + event["dur"] >= lo):
            out.append(event)
        index += 1
    return out
