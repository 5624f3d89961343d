"""Two runs compared (HTA's trace diff, on simulated schedules): which op and kernel names
changed their total time, ranked by the absolute change, and how each rank's makespan and
typed critical path changed. The runs are two jobs with the same ranks, or a replay and a
what-if of it; ranks are matched by position. Names are compared by the sum of their nodes'
simulated durations (end - start), so a what-if's scaled durations show as changes."""

from __future__ import annotations

from typing import Optional

import msgspec
import numpy as np

from chakra.errors import DiffError
from chakra.simulate.sim_result import SimResult
from chakra.views.critical import KINDS, typed_critical_path

KERNEL, HOST_OP = "kernel", "op"


class NameChange(msgspec.Struct, frozen=True):
    """One op or kernel name of one rank: its node count and total simulated time (µs) in
    run A and run B (0 where a run has none) and the change B - A (``change_pct``: of A's,
    None when A has none)."""

    rank: int
    name: str
    kind: str  # KERNEL (runs on a GPU stream) or HOST_OP
    count_a: int
    count_b: int
    total_a_us: float
    total_b_us: float
    change_us: float
    change_pct: Optional[float]


class PathChange(msgspec.Struct, frozen=True):
    """One rank's makespan (``kind`` "makespan") or the time on its critical path of one
    kind (:data:`chakra.views.critical.KINDS`) in A and B (µs), and the change B - A."""

    rank: int
    kind: str
    a_us: float
    b_us: float
    change_us: float


class RunDiff(msgspec.Struct, frozen=True):
    """``names``: the changed names, largest absolute change first (ties by rank, name);
    ``path``: per rank, the makespan then each critical-path kind."""

    names: list[NameChange]
    path: list[PathChange]


def _totals(result: SimResult, rank: int) -> dict[tuple[str, str], tuple[int, float]]:
    graph = result.graphs[rank]
    spent = np.frombuffer(result.end[rank], np.float64) - np.frombuffer(
        result.start[rank], np.float64
    )
    gpu = [r.is_gpu for r in graph.resources] + [False]
    resource = graph.resource
    out: dict[tuple[str, str], tuple[int, float]] = {}
    for i, name in enumerate(graph.names):
        key = (name, KERNEL if gpu[resource[i]] else HOST_OP)
        count, total = out.get(key, (0, 0.0))
        out[key] = (count + 1, total + float(spent[i]))
    return out


def _name_changes(a: SimResult, b: SimResult, rank: int, min_change_us: float) -> list[NameChange]:
    ta, tb = _totals(a, rank), _totals(b, rank)
    out = []
    for key in sorted(set(ta) | set(tb)):
        (ca, ua), (cb, ub) = ta.get(key, (0, 0.0)), tb.get(key, (0, 0.0))
        change = ub - ua
        if abs(change) <= min_change_us and ca == cb:
            continue
        pct = 100.0 * change / ua if ua > 0 else None
        out.append(NameChange(a.graphs[rank].rank, key[0], key[1], ca, cb, ua, ub, change, pct))
    return out


def _path_changes(a: SimResult, b: SimResult, rank: int) -> list[PathChange]:
    pa, pb = typed_critical_path(a, rank), typed_critical_path(b, rank)
    fields = [("makespan", "makespan_us")] + [(k, f"{k}_us") for k in KINDS]
    return [
        PathChange(pa.rank, kind, getattr(pa, f), getattr(pb, f), getattr(pb, f) - getattr(pa, f))
        for kind, f in fields
    ]


def diff_runs(a: SimResult, b: SimResult, min_change_us: float = 0.0) -> RunDiff:
    """Compare run ``a`` with run ``b`` (simulated, same number of ranks). Names whose total
    changed by ``min_change_us`` or less (and whose count did not change) are left out.
    Raises DiffError when the runs have different numbers of ranks."""
    if len(a.graphs) != len(b.graphs):
        raise DiffError(
            f"the runs have {len(a.graphs)} and {len(b.graphs)} ranks: only runs with the "
            "same ranks compare"
        )
    names: list[NameChange] = []
    path: list[PathChange] = []
    for r in range(len(a.graphs)):
        names += _name_changes(a, b, r, min_change_us)
        path += _path_changes(a, b, r)
    names.sort(key=lambda c: (-abs(c.change_us), c.rank, c.name, c.kind))
    return RunDiff(names, path)
