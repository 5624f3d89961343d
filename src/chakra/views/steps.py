"""Per training step: how long each ``ProfilerStep#N`` took, simulated and measured, and what
ran during it, by kind of work (:data:`~chakra.views.critical.KINDS`).

A step is the host op ``torch.profiler`` records as ``ProfilerStep#N`` (the converter may
cut it in segments around its children: the step spans all of them). Its window is its
first start to its last end; the kind times are the time, inside the simulated window,
during which at least one node of that kind runs (any resource of the rank). Kinds run at
once (the host launches while the GPU computes), so they need not sum to the step's
duration."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Optional

import msgspec
import numpy as np

from chakra.simulate.sim_result import SimResult
from chakra.views.critical import KINDS, node_kinds
from chakra.views.intervals import union

#: The host op name a profiled step carries.
STEP_NAME = re.compile(r"ProfilerStep#(\d+)")


class StepStat(msgspec.Struct, frozen=True):
    """One step of one rank. ``start_us``: its simulated start, µs since the rank's first
    simulated start; ``simulated_us`` and ``measured_us`` (None: no measured start) its
    duration; ``error_pct`` simulated vs measured. ``cpu_us`` ... ``unexplained_us``: the
    simulated time inside the step during which some node of that kind runs."""

    rank: int
    step: int
    start_us: float
    simulated_us: float
    measured_us: Optional[float]
    error_pct: Optional[float]
    cpu_us: float
    gpu_us: float
    communication_us: float
    launch_us: float
    unexplained_us: float


def step_nodes(names: list[str]) -> dict[int, list[int]]:
    """Node positions of each step number, for the nodes named ``ProfilerStep#N``."""
    out: dict[int, list[int]] = defaultdict(list)
    for node, name in enumerate(names):
        if name.startswith("ProfilerStep#"):
            match = STEP_NAME.fullmatch(name)
            if match:
                out[int(match.group(1))].append(node)
    return out


def _inside(begins: np.ndarray, finishes: np.ndarray, lo: float, hi: float) -> float:
    """Time of the disjoint intervals ``begins:finishes`` inside ``lo:hi``."""
    return float(np.clip(np.minimum(finishes, hi) - np.maximum(begins, lo), 0.0, None).sum())


def step_breakdown(result: SimResult, rank: int = 0) -> list[StepStat]:
    """The :class:`StepStat` of every ``ProfilerStep#N`` of the graph at position ``rank``,
    by step number; empty when the trace has no step annotations. One pass over the names,
    one interval union per kind."""
    graph = result.graphs[rank]
    steps = step_nodes(graph.names)
    if not steps:
        return []
    starts = np.frombuffer(result.start[rank], np.float64)
    ends = np.frombuffer(result.end[rank], np.float64)
    measured = np.frombuffer(graph.measured_start_us, np.float64)
    measured_ends = measured + np.frombuffer(graph.duration_us, np.float64)
    kinds = node_kinds(graph)
    unions = [union(starts[kinds == code], ends[kinds == code]) for code in range(len(KINDS))]
    origin = float(starts.min())
    out = []
    for number in sorted(steps):
        nodes = np.asarray(steps[number], dtype=np.int64)
        lo, hi = float(starts[nodes].min()), float(ends[nodes].max())
        known = nodes[measured[nodes] >= 0]
        took = None
        if len(known):
            took = float(measured_ends[known].max() - measured[known].min())
        error = 100.0 * (hi - lo - took) / took if took else None
        times = [_inside(b, f, lo, hi) for b, f in unions]
        out.append(StepStat(graph.rank, number, lo - origin, hi - lo, took, error, *times))
    return out
