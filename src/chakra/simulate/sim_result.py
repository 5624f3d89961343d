"""What one simulation returns: :class:`SimResult`, the frozen outcome of a run (each
rank's graph, start and end times, the model that timed it, and, from
:func:`chakra.simulate.simulate`, the per-rank summaries and critical paths)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import msgspec
import numpy as np

from chakra.simulate.astra_network import AstraRing
from chakra.simulate.network import NetworkModel
from chakra.simulate.sim_graph import SimGraph


class ResourceUse(msgspec.Struct, frozen=True):
    """One thread or stream of one rank: ``busy_us`` the time its real ops run and
    ``utilisation`` that time over the makespan; ``unexplained_us`` the time of its
    ``[idle]``/``[delay]`` nodes (measured time the graph does not explain), left out of
    busy."""

    resource: str
    busy_us: float
    utilisation: float
    unexplained_us: float = 0.0


class RankResult(msgspec.Struct, frozen=True):
    """``simulated_makespan_us``: first start to last end. ``measured_makespan_us`` and
    ``error_pct`` when the graph carries measured starts (``start_time_micros``).

    With ``rank_results(..., explain=True)``: ``model_only_makespan_us``, the makespan with
    every ``[delay]`` and ``[idle]`` node taking no time (what the ops and their
    dependencies explain), its ``model_only_error_pct`` against the measured makespan, and
    ``unexplained_us``, the time of ``[delay]``/``[idle]`` nodes on the replay's critical
    path; else None."""

    rank: int
    nodes: int
    simulated_makespan_us: float
    measured_makespan_us: Optional[float]
    error_pct: Optional[float]
    resources: list[ResourceUse]
    model_only_makespan_us: Optional[float] = None
    model_only_error_pct: Optional[float] = None
    unexplained_us: Optional[float] = None
    #: of ``unexplained_us``, the ``[delay]`` nodes' time alone (waits no edge explains:
    #: launch latency, wake-ups, causes the trace does not record); the rest is ``[idle]``
    delay_us: Optional[float] = None


class PathEntry(msgspec.Struct, frozen=True, array_like=True):
    """A node name on a rank's critical path and the summed time (µs) of its nodes there.
    Written as ``[name, total_us]`` (``msgspec.to_builtins``)."""

    name: str
    total_us: float


class SimResult(msgspec.Struct, frozen=True):
    """The outcome of one simulation of one or more ranks together.

    ``start[r][i]`` and ``end[r][i]``: when node ``i`` (position in ``graphs[r]``) ran, in
    µs; read-only buffers (index them, or ``np.frombuffer`` them, read-only too).
    ``network``: the model that timed the collectives (None: their recorded time);
    ``ring``: ASTRA-sim's ring when the run used ASTRA-sim's resource model.
    ``ranks`` and ``critical_paths`` (largest first) per rank, as
    :func:`chakra.simulate.simulate` fills them (empty for a bare run).
    ``nodes_matched``: for a what-if run, how many nodes (all ranks) each rule matched."""

    graphs: tuple[SimGraph, ...]
    start: tuple[memoryview, ...]
    end: tuple[memoryview, ...]
    network: Optional[NetworkModel] = None
    ring: Optional[AstraRing] = None
    ranks: tuple[RankResult, ...] = ()
    critical_paths: tuple[tuple[PathEntry, ...], ...] = ()
    nodes_matched: tuple[int, ...] = ()

    def makespans(self) -> list[float]:
        """Each rank's first start to last end (µs); 0 for a rank with no nodes."""
        out = []
        for start, end in zip(self.start, self.end):
            starts, ends = np.frombuffer(start, np.float64), np.frombuffer(end, np.float64)
            out.append(float(ends.max() - starts.min()) if len(starts) else 0.0)
        return out


def frozen_times(times: Sequence[Sequence[float]]) -> tuple[memoryview, ...]:
    """Read-only views of per-rank time arrays (``array("d")``, not copied: whoever
    filled them must drop them)."""
    return tuple(memoryview(t).toreadonly() for t in times)
