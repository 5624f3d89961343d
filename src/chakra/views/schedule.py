"""One rank's schedule as the views read it: per node, when it ran (simulated or measured),
and what it is (a GPU kernel, a communication, a ``[delay]``/``[idle]`` node)."""

from __future__ import annotations

from typing import Optional

import msgspec
import numpy as np

from chakra.simulate.analysis import DELAY, IDLE
from chakra.simulate.resources import gpu_mask
from chakra.simulate.sim_graph import SimGraph
from chakra.simulate.sim_result import SimResult

SIMULATED, MEASURED = "simulated", "measured"


class Schedule(msgspec.Struct, frozen=True):
    """Arrays over the nodes with known times of one rank. ``origin_us`` and
    ``makespan_us``: the rank's first start and last end minus first start. ``on_gpu``: the
    node holds a GPU stream; ``comm``: a communication node (any resource); ``unexplained``:
    a ``[delay]`` or ``[idle]`` node (never counted as compute). ``nodes``: node positions
    in the graph."""

    rank: int
    source: str
    origin_us: float
    makespan_us: float
    nodes: np.ndarray
    start_us: np.ndarray
    end_us: np.ndarray
    on_gpu: np.ndarray
    comm: np.ndarray
    unexplained: np.ndarray

    @property
    def compute(self) -> np.ndarray:
        """Mask of the GPU kernels that compute (not communication, not delay/idle)."""
        return self.on_gpu & ~self.comm & ~self.unexplained


def gpu_resources(graph: SimGraph) -> np.ndarray:
    """Per resource slot (plus a last False for "no resource"): a GPU stream or slot."""
    return gpu_mask(graph.resources)


def _schedule(graph: SimGraph, source: str, starts: np.ndarray, ends: np.ndarray) -> Schedule:
    known = np.flatnonzero(starts >= 0)
    resource = np.frombuffer(graph.resource, dtype=np.int64)[known]
    comm = np.zeros(len(graph.ids), bool)
    comm[list(graph.comm)] = True
    names = graph.names
    unexplained = np.fromiter((names[i] in (DELAY, IDLE) for i in known), bool, len(known))
    begin, finish = starts[known], ends[known]
    origin = float(begin.min()) if len(known) else 0.0
    span = float(finish.max()) - origin if len(known) else 0.0
    return Schedule(
        graph.rank,
        source,
        origin,
        span,
        known,
        begin,
        finish,
        gpu_resources(graph)[resource],
        comm[known],
        unexplained,
    )


def simulated_schedule(result: SimResult, rank: int) -> Schedule:
    """The schedule ``result`` holds for the graph at position ``rank``."""
    starts = np.frombuffer(result.start[rank], dtype=np.float64)
    ends = np.frombuffer(result.end[rank], dtype=np.float64)
    return _schedule(result.graphs[rank], SIMULATED, starts, ends)


def measured_schedule(graph: SimGraph) -> Optional[Schedule]:
    """The measured schedule (``start_time_micros`` plus recorded duration) of the nodes
    with a measured start; None when no node has one."""
    starts = np.frombuffer(graph.measured_start_us, dtype=np.float64)
    if not (starts >= 0).any():
        return None
    return _schedule(graph, MEASURED, starts, starts + np.frombuffer(graph.duration_us, np.float64))
