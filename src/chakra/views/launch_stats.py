"""Kernel launch statistics per kernel name, measured beside simulated (HTA's launch view).

A GPU node is launched from the host nodes it depends on directly, or through a ``[delay]``
node (the launch latency the converter measured): its *launch* is the latest end of those
host nodes, in the measured and in the simulated schedule (a host op's own time is cut at
each launch it makes, so that end is where the launch call begins). The launch delay is
the kernel's start minus its launch. The launch call's own duration is only in the ET+
(``launch.dur``): :func:`measured_launches` reads it, and with it the exact measured times
(the ``.et`` keeps whole microseconds); without it those columns are None.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import msgspec
import numpy as np

from chakra.convert import EtPlusTrace
from chakra.simulate.analysis import DELAY
from chakra.simulate.sim_graph import NO_RESOURCE, SimGraph
from chakra.simulate.sim_result import SimResult


class MeasuredLaunches(msgspec.Struct, frozen=True):
    """From an ET+: per launched GPU node (by id), its launch call's start and duration and
    the kernel's start (µs, as measured)."""

    node_ids: np.ndarray
    call_start_us: np.ndarray
    call_us: np.ndarray
    kernel_start_us: np.ndarray


class LaunchStat(msgspec.Struct, frozen=True):
    """One kernel name of one rank: ``count`` launches, and the mean of each figure over
    them (µs). ``*_measured_us`` None: no launch of this name has measured times;
    ``launch_call_us`` and the ``delay_after_call_*`` figures need the ET+ (None
    without). ``delay_*``: kernel start minus launch call start; ``delay_after_call_*``:
    minus the call's end."""

    rank: int
    name: str
    count: int
    gpu_measured_us: Optional[float]
    gpu_simulated_us: float
    launch_call_us: Optional[float]
    delay_measured_us: Optional[float]
    delay_simulated_us: float
    max_delay_measured_us: Optional[float]
    max_delay_simulated_us: float
    delay_after_call_measured_us: Optional[float]
    delay_after_call_simulated_us: Optional[float]


class Launches(msgspec.Struct, frozen=True):
    """Every launched GPU node of one rank (``nodes``: positions in the graph) and its
    launch time, simulated and measured (-1: unknown)."""

    nodes: np.ndarray
    simulated_us: np.ndarray
    measured_us: np.ndarray


def measured_launches(trace: EtPlusTrace) -> MeasuredLaunches:
    """The launch calls an ET+ records (GPU nodes with ``launch.ts`` and ``launch.dur``)."""
    rows = [
        (n.id, float(n.launch.ts), float(n.launch.dur), float(n.ts) if n.ts is not None else -1.0)
        for n in trace.nodes
        if n.launch is not None and n.launch.ts is not None and n.launch.dur is not None
    ]
    ids, starts, calls, kernels = zip(*rows) if rows else ((), (), (), ())
    return MeasuredLaunches(
        np.array(ids, np.int64), np.array(starts), np.array(calls), np.array(kernels)
    )


def _host_origins(graph: SimGraph, node: int, on_host: np.ndarray) -> list[int]:
    """The host nodes ``node`` is launched from: its host predecessors, and those of its
    ``[delay]`` predecessors."""
    preds, start = graph.preds, graph.pred_start
    out = []
    for k in range(start[node], start[node + 1]):
        p = preds[k]
        if on_host[p]:
            out.append(p)
        elif graph.names[p] == DELAY:
            out += [q for q in preds[start[p] : start[p + 1]] if on_host[q]]
    return out


def launches(result: SimResult, rank: int) -> Launches:
    """The :class:`Launches` of the graph at position ``rank`` of ``result``."""
    graph = result.graphs[rank]
    resource = np.frombuffer(graph.resource, np.int64)
    host = np.array([r.is_host for r in graph.resources] + [False], bool)
    gpu = np.array([r.is_gpu for r in graph.resources] + [False], bool)
    on_host, on_gpu = host[resource], gpu[resource]
    on_host[resource == NO_RESOURCE] = False
    end = np.frombuffer(result.end[rank], np.float64)
    measured = np.frombuffer(graph.measured_start_us, np.float64)
    measured_end = np.where(measured >= 0, measured + np.frombuffer(graph.duration_us), -1.0)
    nodes, simulated, measured_at = [], [], []
    for node in np.flatnonzero(on_gpu).tolist():
        origins = _host_origins(graph, node, on_host)
        if not origins:
            continue
        nodes.append(node)
        simulated.append(float(end[origins].max()))
        ends = measured_end[origins]
        measured_at.append(float(ends.max()) if (ends >= 0).all() else -1.0)
    return Launches(np.array(nodes, np.int64), np.array(simulated), np.array(measured_at))


def _mean(values: np.ndarray) -> Optional[float]:
    return float(values.mean()) if len(values) else None


def launch_stats(
    result: SimResult, rank: int, measured: Optional[MeasuredLaunches] = None
) -> list[LaunchStat]:
    """Per kernel name of the graph at position ``rank``, most launches first (then by
    name); ``measured``: the rank's ET+ launch calls (:func:`measured_launches`)."""
    graph = result.graphs[rank]
    found = launches(result, rank)
    start = np.frombuffer(result.start[rank], np.float64)[found.nodes]
    end = np.frombuffer(result.end[rank], np.float64)[found.nodes]
    kernel_at = np.frombuffer(graph.measured_start_us, np.float64)[found.nodes].copy()
    launch_at, call = found.measured_us.copy(), np.full(len(found.nodes), np.nan)
    if measured is not None:
        row_of = {node_id: k for k, node_id in enumerate(measured.node_ids.tolist())}
        ids = np.frombuffer(graph.ids, np.int64)[found.nodes].tolist()
        for j, node_id in enumerate(ids):
            k = row_of.get(node_id)
            if k is not None:
                launch_at[j] = measured.call_start_us[k]
                call[j] = measured.call_us[k]
                kernel_at[j] = measured.kernel_start_us[k]
    durations = np.frombuffer(graph.duration_us, np.float64)[found.nodes]
    names = np.array([graph.names[i] for i in found.nodes.tolist()], dtype=object)
    return [
        _stat(
            graph.rank,
            name,
            rows,
            durations,
            end - start,
            start - found.simulated_us,
            kernel_at,
            launch_at,
            call,
        )
        for name, rows in _groups(names)
    ]


def _groups(names: np.ndarray) -> list[tuple[str, np.ndarray]]:
    unique, inverse, counts = np.unique(names.astype(str), return_inverse=True, return_counts=True)
    order = sorted(range(len(unique)), key=lambda k: (-counts[k], unique[k]))
    return [(str(unique[k]), np.flatnonzero(inverse == k)) for k in order]


def _stat(rank: int, name: str, rows: np.ndarray, durations: np.ndarray,
          simulated: np.ndarray, sim_delay: np.ndarray, kernel_at: np.ndarray,
          launch_at: np.ndarray, call: np.ndarray) -> LaunchStat:  # fmt: skip
    known = rows[(kernel_at[rows] >= 0) & (launch_at[rows] >= 0)]
    delay = kernel_at[known] - launch_at[known]
    timed = known[~np.isnan(call[known])]
    with_call = rows[~np.isnan(call[rows])]
    return LaunchStat(
        rank,
        name,
        len(rows),
        _mean(durations[known]),
        float(simulated[rows].mean()),
        _mean(call[with_call]),
        _mean(delay),
        float(sim_delay[rows].mean()),
        float(delay.max()) if len(delay) else None,
        float(sim_delay[rows].max()),
        _mean(kernel_at[timed] - launch_at[timed] - call[timed]),
        _mean(sim_delay[with_call] - call[with_call]),
    )


def job_launch_stats(
    result: SimResult, measured: Sequence[Optional[MeasuredLaunches]] = ()
) -> list[LaunchStat]:
    """:func:`launch_stats` of every rank, rank after rank (``measured``: per rank, or
    empty)."""
    out: list[LaunchStat] = []
    for r in range(len(result.graphs)):
        out += launch_stats(result, r, measured[r] if r < len(measured) else None)
    return out
