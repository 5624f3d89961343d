"""Stream queue length over time (HTA's queue length view), measured beside simulated: on
each GPU stream, how many kernels were launched and have not finished yet. A kernel joins
its stream's queue at its launch (:func:`chakra.views.launch_stats.launches`) and leaves it
at its end; kernels with no launch from the host are left out."""

from __future__ import annotations

import msgspec
import numpy as np

from chakra.simulate.sim_result import SimResult
from chakra.views.launch_stats import launches
from chakra.views.schedule import MEASURED, SIMULATED


class StreamQueue(msgspec.Struct, frozen=True):
    """One stream of one rank in one schedule (``source``): the queue length after each
    change (``times_us``, ``lengths``: a step function, 0 after the last), its maximum,
    its mean over the changes and its time-weighted mean from the first launch to the
    last end."""

    rank: int
    stream: str
    source: str
    kernels: int
    max_length: int
    mean_length: float
    time_weighted_length: float
    times_us: list[float]
    lengths: list[int]


def queue_series(enter_us: np.ndarray, leave_us: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The queue length after each change (times ascending, one entry per distinct time)
    of items that join at ``enter_us`` and leave at ``leave_us``."""
    times = np.concatenate([enter_us, leave_us])
    steps = np.concatenate([np.ones(len(enter_us), np.int64), -np.ones(len(leave_us), np.int64)])
    distinct, inverse = np.unique(times, return_inverse=True)
    change = np.zeros(len(distinct), np.int64)
    np.add.at(change, inverse, steps)
    return distinct, np.cumsum(change)


def _queue(
    rank: int, stream: str, source: str, enter: np.ndarray, leave: np.ndarray
) -> StreamQueue:
    times, lengths = queue_series(enter, leave)
    span = float(times[-1] - times[0]) if len(times) else 0.0
    weighted = float((lengths[:-1] * np.diff(times)).sum() / span) if span > 0 else 0.0
    return StreamQueue(
        rank,
        stream,
        source,
        len(enter),
        int(lengths.max()) if len(lengths) else 0,
        float(lengths.mean()) if len(lengths) else 0.0,
        weighted,
        times.tolist(),
        lengths.tolist(),
    )


def rank_queue_lengths(result: SimResult, rank: int) -> list[StreamQueue]:
    """Every GPU stream of the graph at position ``rank``: simulated, then measured where
    every launched kernel of the stream has measured times."""
    graph = result.graphs[rank]
    found = launches(result, rank)
    slot = np.frombuffer(graph.resource, np.int64)[found.nodes]
    end = np.frombuffer(result.end[rank], np.float64)[found.nodes]
    measured = np.frombuffer(graph.measured_start_us, np.float64)[found.nodes]
    measured_end = measured + np.frombuffer(graph.duration_us, np.float64)[found.nodes]
    out = []
    for k in sorted(set(slot.tolist())):
        rows = slot == k
        label = graph.resources[k].label
        out.append(_queue(graph.rank, label, SIMULATED, found.simulated_us[rows], end[rows]))
        known = (measured[rows] >= 0).all() and (found.measured_us[rows] >= 0).all()
        if known:
            out.append(
                _queue(graph.rank, label, MEASURED, found.measured_us[rows], measured_end[rows])
            )
    return out


def queue_lengths(result: SimResult) -> list[StreamQueue]:
    """:func:`rank_queue_lengths` of every rank, rank after rank."""
    out: list[StreamQueue] = []
    for r in range(len(result.graphs)):
        out += rank_queue_lengths(result, r)
    return out
