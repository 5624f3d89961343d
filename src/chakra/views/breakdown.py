"""Where a rank's step went, HTA style: the temporal breakdown (GPU computing, only
communicating, idle), how much communication compute hides, and the top kernels."""

from __future__ import annotations

from collections import defaultdict
from typing import Optional

import msgspec
import numpy as np

from chakra.simulate.sim_graph import SimGraph
from chakra.views.intervals import covered
from chakra.views.schedule import Schedule


class TemporalBreakdown(msgspec.Struct, frozen=True):
    """A rank's step (first start to last end, ``makespan_us``) cut in three, µs:
    ``compute_us`` while at least one compute kernel runs on a GPU stream;
    ``communication_us`` while communication runs and no compute kernel does (exposed
    communication); ``idle_us`` the rest (the GPU neither computes nor communicates, e.g.
    waiting for the host). The three sum to the makespan. Percentages of the makespan."""

    rank: int
    source: str
    makespan_us: float
    compute_us: float
    communication_us: float
    idle_us: float
    compute_pct: float
    communication_pct: float
    idle_pct: float


class Overlap(msgspec.Struct, frozen=True):
    """Communication hidden by compute: ``communication_us`` the time any communication
    runs, ``overlapped_us`` the part of it during which a compute kernel runs too,
    ``fraction`` their ratio (None without communication)."""

    rank: int
    source: str
    communication_us: float
    overlapped_us: float
    fraction: Optional[float]


class KernelStat(msgspec.Struct, frozen=True):
    """GPU nodes of one name: how many, their total and mean time (µs; a collective's time
    includes its wait for the other ranks) and their share of all GPU node time."""

    name: str
    count: int
    total_us: float
    mean_us: float
    share: float
    communication: bool


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


def temporal_breakdown(schedule: Schedule) -> TemporalBreakdown:
    """The :class:`TemporalBreakdown` of ``schedule``: two interval unions."""
    compute = schedule.compute
    starts, ends = schedule.start_us, schedule.end_us
    computing = covered(starts[compute], ends[compute])
    active = compute | schedule.comm
    busy = covered(starts[active], ends[active])
    exposed, span = busy - computing, schedule.makespan_us
    idle = max(span - busy, 0.0)
    return TemporalBreakdown(
        schedule.rank,
        schedule.source,
        span,
        computing,
        exposed,
        idle,
        _pct(computing, span),
        _pct(exposed, span),
        _pct(idle, span),
    )


def overlap(schedule: Schedule) -> Overlap:
    """The :class:`Overlap` of ``schedule``: overlapped = comm + compute -
    (comm or compute), each the time covered by such nodes."""
    compute, comm = schedule.compute, schedule.comm
    starts, ends = schedule.start_us, schedule.end_us
    communicating = covered(starts[comm], ends[comm])
    computing = covered(starts[compute], ends[compute])
    either = covered(starts[comm | compute], ends[comm | compute])
    both = max(communicating + computing - either, 0.0)
    fraction = both / communicating if communicating > 0 else None
    return Overlap(schedule.rank, schedule.source, communicating, both, fraction)


def kernel_breakdown(schedule: Schedule, graph: SimGraph, top: int = 10) -> list[KernelStat]:
    """The ``top`` GPU node names by total time, largest first (ties by name); ``[delay]``
    and ``[idle]`` nodes left out."""
    kernels = schedule.on_gpu & ~schedule.unexplained
    durations = (schedule.end_us - schedule.start_us)[kernels]
    totals: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    comm_names = set()
    names = graph.names
    for node, duration, is_comm in zip(schedule.nodes[kernels].tolist(), durations.tolist(),
                                       schedule.comm[kernels].tolist()):  # fmt: skip
        name = names[node]
        totals[name] += duration
        counts[name] += 1
        if is_comm:
            comm_names.add(name)
    whole = float(np.sum(durations))
    ranked = sorted(totals, key=lambda name: (-totals[name], name))[:top]
    return [
        KernelStat(
            name,
            counts[name],
            totals[name],
            totals[name] / counts[name],
            totals[name] / whole if whole > 0 else 0.0,
            name in comm_names,
        )
        for name in ranked
    ]
