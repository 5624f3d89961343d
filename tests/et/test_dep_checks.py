"""The graph-wide checks over flat arrays: the measured starts only speed the cycle search up
(what it finds never depends on them), and every strongly connected region is found."""

from __future__ import annotations

from typing import Any

import msgspec
import networkx as nx
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from chakra.et.dep_checks import DepArrays, DepFindings, dependency_problems


@st.composite
def dep_arrays(draw: st.DrawFn) -> DepArrays:
    """Small graphs with repeated ids, forward, dangling and self deps, ctrl deps, and
    measured starts that agree with the deps or not (ties, unknown ones)."""
    count = draw(st.integers(1, 25))
    space = draw(st.sampled_from([count, count + 3, 2 * count]))
    ids = draw(st.lists(st.integers(0, space - 1), min_size=count, max_size=count))
    data: list[int] = []
    data_start = [0]
    ctrl: list[int] = []
    ctrl_owner: list[int] = []
    for position in range(count):
        data.extend(draw(st.lists(st.integers(0, space + 1), max_size=3)))
        data_start.append(len(data))
        listed = draw(st.lists(st.integers(0, space + 1), max_size=2))
        ctrl.extend(listed)
        ctrl_owner.extend([position] * len(listed))
    starts = draw(st.lists(st.sampled_from([-1.0, 0.0, 5.0, 7.0]) | st.floats(0, 50),
                           min_size=count, max_size=count))  # fmt: skip
    return DepArrays(
        np.array(ids, dtype=np.uint64), [f"op{i}" for i in range(count)],
        np.array(data, dtype=np.uint64), np.array(data_start, dtype=np.int64),
        np.array(ctrl, dtype=np.uint64), np.array(ctrl_owner, dtype=np.int64),
        np.array(starts, dtype=np.float64),
    )  # fmt: skip


def comparable(found: DepFindings) -> Any:
    return (found.placed, found.tail)


def regions(deps: DepArrays) -> int:
    """Strongly connected regions of two or more ids, by networkx."""
    ids = deps.ids.tolist()
    known = set(ids)
    graph = nx.DiGraph()
    graph.add_nodes_from(known)
    data = deps.data.tolist()
    for position, node_id in enumerate(ids):
        listed = data[deps.data_start[position] : deps.data_start[position + 1]]
        listed += [d for d, o in zip(deps.ctrl.tolist(), deps.ctrl_owner.tolist()) if o == position]
        graph.add_edges_from((d, node_id) for d in listed if d in known and d != node_id)
    return sum(len(c) > 1 for c in nx.strongly_connected_components(graph))


@settings(max_examples=300, deadline=None)
@given(dep_arrays())
def test_starts_never_change_what_is_found(deps: DepArrays) -> None:
    found = dependency_problems(deps)
    unknown = msgspec.structs.replace(deps, starts=np.full(len(deps.ids), -1.0))
    assert comparable(found) == comparable(dependency_problems(unknown))
    backwards = msgspec.structs.replace(deps, starts=-np.arange(len(deps.ids), dtype=float))
    assert comparable(found) == comparable(dependency_problems(backwards))
    cycles = [p for p in found.tail if p.kind == "cycle"]
    assert len(cycles) == regions(deps)


def test_a_chain_against_the_file_order_along_the_starts() -> None:
    """Each node depends on the next one in the file, which started earlier: no cycle."""
    count = 1000
    ids = np.arange(count, dtype=np.uint64)[::-1].copy()  # position i holds id count-1-i
    data = ids[1:].copy()  # position i depends on id count-2-i: position i+1
    data_start = np.minimum(np.arange(count + 1), count - 1).astype(np.int64)
    starts = ids.astype(np.float64)
    deps = DepArrays(ids, ["op"] * count, data, data_start, np.zeros(0, np.uint64),
                     np.zeros(0, np.int64), starts)  # fmt: skip
    found = dependency_problems(deps)
    assert found.placed == [] and found.tail == []
    closed = msgspec.structs.replace(deps, data=np.append(data, np.uint64(count - 1)),
                                     data_start=np.append(data_start[:-1], count))  # fmt: skip
    (cycle,) = dependency_problems(closed).tail
    assert cycle.kind == "cycle" and len(cycle.related_ids) == count
