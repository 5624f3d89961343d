"""What bounds a rank, and how much making that work faster could give at most.

The *bound* is the kind of work (:data:`~chakra.views.critical.KINDS`) with the most time on
the rank's typed critical path; unexplained time (``[idle]`` gaps, ``[delay]`` nodes no GPU
node waits on) is a kind of its own, so a rank whose path is mostly unexplained says so
rather than passing for CPU-bound. The *slack* of a kind is what a speed-up of that kind can
give at most: the job replayed again with every node of the kind taking no time (the
what-if machinery: same model, same take order), each rank's makespan then, and its change
in % of the replay. A kind on the path may give far less than its share of the path, when
another chain is close behind."""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from typing import Optional

import msgspec
import numpy as np

from chakra.simulate.sim_result import SimResult
from chakra.simulate.times import rerun
from chakra.views.critical import (
    COMMUNICATION,
    CPU,
    GPU,
    KINDS,
    LAUNCH,
    UNEXPLAINED,
    CriticalPath,
    node_kinds,
)

#: The headline's words for each kind.
KIND_LABELS = {
    CPU: "CPU-bound (host ops)",
    GPU: "GPU-bound (compute kernels)",
    COMMUNICATION: "communication-bound",
    LAUNCH: "launch-bound (launch latency)",
    UNEXPLAINED: "unexplained-bound ([idle]/[delay] time the trace does not explain)",
}
#: What "this kind at zero duration" means, in words.
FREE_LABELS = {
    CPU: "host ops free",
    GPU: "GPU compute free",
    COMMUNICATION: "communication free",
    LAUNCH: "no launch latency",
    UNEXPLAINED: "no unexplained time",
}


class KindSlack(msgspec.Struct, frozen=True):
    """One kind of one rank: ``on_path_us`` its time on the critical path;
    ``free_makespan_us`` the rank's makespan when every node of the kind (all ranks) takes
    no time; ``change_pct`` that makespan against the replay's, in % (<= 0: the most a
    speed-up of this kind can give)."""

    kind: str
    on_path_us: float
    free_makespan_us: float
    change_pct: float


class Bound(msgspec.Struct, frozen=True):
    """A rank's verdict. ``kind``: the kind with the most time on the critical path
    (``cpu`` counts only real host ops); ``share_pct``: that time in % of the makespan;
    ``headline``: the sentence report.html leads the critical path with; ``slack``: a
    :class:`KindSlack` per kind with nodes in the job (empty when not computed)."""

    rank: int
    kind: str
    share_pct: float
    headline: str
    slack: list[KindSlack]


def free_makespans(result: SimResult) -> Mapping[str, Sequence[float]]:
    """Per kind with a node of non-zero duration in some rank: each rank's makespan (µs)
    when those nodes take no time. One more run of the job per kind."""
    kinds = [node_kinds(graph) for graph in result.graphs]
    out: dict[str, list[float]] = {}
    for code, kind in enumerate(KINDS):
        graphs, any_time = [], False
        for graph, of_kind in zip(result.graphs, kinds):
            durations = np.frombuffer(graph.duration_us, dtype=np.float64).copy()
            mask = of_kind == code
            any_time = any_time or bool((durations[mask] > 0).any())
            durations[mask] = 0.0
            graphs.append(
                msgspec.structs.replace(graph, duration_us=array("d", durations.tobytes()))
            )
        if any_time:
            out[kind] = rerun(result, graphs, f"slack: {FREE_LABELS[kind]}").makespans()
    return out


def _on_path(path: CriticalPath, kind: str) -> float:
    return float(getattr(path, f"{kind}_us"))


def bound(path: CriticalPath, free: Optional[Mapping[str, Sequence[float]]] = None,
          position: int = 0) -> Bound:  # fmt: skip
    """The :class:`Bound` of ``path`` (the rank at ``position`` of the job). ``free``: from
    :func:`free_makespans`, for the slack (None: no slack)."""
    kind = max(KINDS, key=lambda k: _on_path(path, k))  # ties: the first in KINDS
    makespan = path.makespan_us
    share = 100.0 * _on_path(path, kind) / makespan if makespan > 0 else 0.0
    slack = []
    for k, makespans in (free or {}).items():
        alone = makespans[position]
        change = 100.0 * (alone - makespan) / makespan if makespan > 0 else 0.0
        slack.append(KindSlack(k, _on_path(path, k), alone, change))
    headline = f"{KIND_LABELS[kind]}: {share:.1f}% of the makespan is on this kind of work"
    headline += " along the critical path"
    mine = next((s for s in slack if s.kind == kind), None)
    if mine is not None:
        headline += f"; {FREE_LABELS[kind]} would give at most {mine.change_pct:+.2f}%"
    return Bound(path.rank, kind, share, headline + ".", slack)
