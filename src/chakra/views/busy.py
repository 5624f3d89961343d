"""Busy fraction over time of every host thread and GPU stream of every rank, simulated and
measured, as numbers (the data of the pipeline's utilisation picture, which ``report.html``
draws as SVG without matplotlib)."""

from __future__ import annotations

from typing import Any, Optional

import msgspec
import numpy as np

from chakra.simulate.analysis import unexplained_nodes
from chakra.simulate.resources import display_order
from chakra.simulate.sim_result import SimResult

#: the time bins of a busy series (and of utilisation.png's rows)
BINS = 200


def busy_before(edges: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Total busy time of the intervals ``starts[i]:ends[i]`` before each of ``edges``:
    sum over i of clip(edge - start, 0, end - start). Two sorts and two binary searches."""
    begins, finishes = np.sort(starts), np.sort(ends)
    begun = np.r_[0.0, np.cumsum(begins)]
    finished = np.r_[0.0, np.cumsum(finishes)]
    k_begun = np.searchsorted(begins, edges, "left")
    k_done = np.searchsorted(finishes, edges, "left")
    return (k_begun * edges - begun[k_begun]) - (k_done * edges - finished[k_done])


def utilisation(starts: Any, ends: Any, nodes: list[int], origin: float, span: float) -> list:
    """Busy fraction of one resource in each of ``BINS`` equal time bins of ``span`` µs
    from ``origin`` (nodes ``nodes`` of the parallel ``starts``/``ends``)."""
    width = span / BINS if span > 0 else 1.0
    index = np.asarray(nodes, dtype=np.int64)
    begin = np.asarray(starts, dtype=np.float64)[index] - origin
    end = np.asarray(ends, dtype=np.float64)[index] - origin
    edges = np.arange(BINS + 1, dtype=np.float64) * width
    return (np.diff(busy_before(edges, begin, end)) / width).tolist()


class BusyBand(msgspec.Struct, frozen=True):
    """One resource of one rank: ``simulated`` and ``measured`` busy fractions (0-1, may
    exceed 1 where nodes of one resource overlap) of its real ops in each of the series'
    bins; ``measured`` None when the graph has no measured starts. ``[idle]``/``[delay]``
    nodes are not busy: their fractions are ``simulated_unexplained`` and
    ``measured_unexplained`` (None when the resource has none)."""

    resource: str
    gpu: bool
    simulated: list[float]
    measured: Optional[list[float]]
    simulated_unexplained: Optional[list[float]] = None
    measured_unexplained: Optional[list[float]] = None


class RankBusy(msgspec.Struct, frozen=True):
    """A rank's bands: host threads first, then GPU streams."""

    rank: int
    bands: list[BusyBand]


class BusySeries(msgspec.Struct, frozen=True):
    """Every rank on one time axis: ``bins`` equal bins over ``span_us`` µs, from the job's
    first simulated start (simulated) and first measured start (measured); ``span_us`` is
    the longer of the two spans, as in :func:`chakra.views.plot.utilisation_figure`."""

    span_us: float
    bins: int
    ranks: list[RankBusy]


def _origin_and_span(schedules: list[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float]:
    known = [(s[s >= 0], e[s >= 0]) for s, e in schedules if (s >= 0).any()]
    if not known:
        return 0.0, 0.0
    origin = min(float(s.min()) for s, _ in known)
    return origin, max(float(e.max()) for _, e in known) - origin


def busy_series(result: SimResult) -> BusySeries:
    """The :class:`BusySeries` of ``result`` after ``run()``: :data:`BINS` bins, two sorts
    and two binary searches per resource and schedule."""
    simulated = [
        (np.frombuffer(s, np.float64), np.frombuffer(e, np.float64))
        for s, e in zip(result.start, result.end)
    ]
    measured = []
    for graph in result.graphs:
        starts = np.frombuffer(graph.measured_start_us, np.float64)
        measured.append((starts, starts + np.frombuffer(graph.duration_us, np.float64)))
    sim_origin, sim_span = _origin_and_span(simulated)
    measured_origin, measured_span = _origin_and_span(measured)
    span = max(sim_span, measured_span, 1e-9)
    ranks = []
    for graph, (s_start, s_end), (m_start, m_end) in zip(result.graphs, simulated, measured):
        resource = np.frombuffer(graph.resource, dtype=np.int64)
        unexplained = unexplained_nodes(graph)
        has_measured = bool((m_start >= 0).any())
        bands = []
        for slot in display_order(graph.resources):
            fractions = []
            for mine in (resource == slot) & ~unexplained, (resource == slot) & unexplained:
                sim = utilisation(s_start, s_end, np.flatnonzero(mine).tolist(), sim_origin, span)
                meas = None
                if has_measured:
                    nodes = np.flatnonzero(mine & (m_start >= 0)).tolist()
                    meas = utilisation(m_start, m_end, nodes, measured_origin, span)
                fractions.append((sim, meas, bool(mine.any())))
            (sim, meas, _), (sim_idle, meas_idle, any_idle) = fractions
            held = graph.resources[slot]
            bands.append(
                BusyBand(held.plot_label, held.is_gpu, sim, meas,
                         sim_idle if any_idle else None, meas_idle if any_idle else None)
            )  # fmt: skip
        ranks.append(RankBusy(graph.rank, bands))
    return BusySeries(span, BINS, ranks)
