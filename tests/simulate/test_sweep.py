"""The one-pass engine against the event-driven one it replaced (kept as a reference): the
same start and end for every node, and the same errors, on random jobs."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chakra.et import set_attr
from chakra.simulate import SimulationError, build_graph
from chakra.simulate.engine import Engine
from chakra.simulate.network import NetworkModel
from chakra.simulate.order import take_order
from chakra.simulate.sweep import sweep
from tests.simulate.reference_engine import ReferenceEngine
from tests.simulate.test_engine import node

PLACES = ["t1", "t2", "s7", "s8", "s9", "none"]
RARELY = st.sampled_from([False] * 9 + [True])


def placed(node_id: int, duration: int, deps: tuple, place: str, coll: Optional[str]) -> Any:
    if place == "none":
        return node(node_id, duration, deps, tid=None, coll=coll)
    if place[0] == "t":
        return node(node_id, duration, deps, tid=int(place[1]), coll=coll)
    return node(node_id, duration, deps, stream=int(place[1]), coll=coll)


@st.composite
def rank_nodes(draw: st.DrawFn, collectives: list[str], measured: str, shuffled: bool,
               cyclic: bool) -> list:  # fmt: skip
    count = draw(st.integers(0, 14))
    # where the collectives go among the other nodes, in the group's order
    cuts = sorted(draw(st.lists(st.integers(0, count), min_size=len(collectives),
                                max_size=len(collectives))))  # fmt: skip
    kinds: list[Optional[str]] = [None] * count
    for offset, (cut, pg) in enumerate(zip(cuts, collectives)):
        kinds.insert(cut + offset, pg)
    total = len(kinds)
    ids = draw(st.permutations(range(1, total + 1))) if shuffled else list(range(1, total + 1))
    nodes, last_collective = [], None
    cycle_at = draw(st.integers(0, total - 1)) if total and cyclic else -1
    for i, pg in enumerate(kinds):
        deps = draw(st.sets(st.integers(0, i - 1), max_size=4)) if i else set()
        if i == cycle_at:  # a dependency on itself or a later node: a cycle, maybe
            deps.add(draw(st.integers(i, total - 1)))
        if pg and last_collective is not None and draw(st.integers(0, 7)):
            deps.add(last_collective)  # mostly, collectives issued in program order
        last_collective = i if pg else last_collective
        place = draw(st.sampled_from(["s9"] * 12 + ["s7", "t1", "none"] if pg else PLACES))
        out = placed(ids[i], draw(st.integers(0, 50)), tuple(ids[d] for d in deps), place, pg)
        if draw(st.integers(0, 5)) == 0:  # a fractional-µs duration
            set_attr(out, "duration_ns", draw(st.integers(0, 50_000)))
        if pg:  # the same on every rank, as their keys must be to meet
            set_attr(out, "comm_size", 1000 * sum(kind == pg for kind in kinds[:i]))
        if measured == "all" or (measured == "mixed" and draw(st.booleans())):
            out.start_time_micros = draw(st.integers(1, 40)) + (3 * i if draw(st.booleans()) else 0)
        nodes.append(out)
    return nodes


@st.composite
def jobs(draw: st.DrawFn) -> list[list]:
    ranks = draw(st.integers(1, 3))
    plan = draw(st.lists(st.sampled_from(["0", "0", "1"]), max_size=4))
    measured = draw(st.sampled_from(["none", "all", "mixed"]))
    shuffled = draw(st.booleans())
    out = []
    for _ in range(ranks):
        collectives = list(plan)
        if collectives and draw(RARELY):  # a rank that skips one
            del collectives[draw(st.integers(0, len(collectives) - 1))]
        out.append(draw(rank_nodes(collectives, measured, shuffled, draw(RARELY))))
    return out


def outcome(engine: Any) -> tuple:
    try:
        engine.run()
        error = None
    except SimulationError as exc:
        error = str(exc)
    return error, [list(s) for s in engine.start], [list(e) for e in engine.end]


@settings(max_examples=400, deadline=None)
@given(jobs(), st.booleans())
@pytest.mark.slow
def test_same_times_and_errors_as_the_event_driven_engine(job: list, networked: bool) -> None:
    network = NetworkModel("ring", 100, 5) if networked else None
    graphs = [build_graph(nodes, rank) for rank, nodes in enumerate(job)]
    expected = outcome(ReferenceEngine(graphs, network))
    assert outcome(Engine(graphs, network)) == expected


def collective(node_id: int, deps: tuple = (), stream: int = 9, pg: str = "0") -> Any:
    return node(node_id, 10, deps, stream=stream, coll=pg)


def test_the_sweep_meets_collectives_across_ranks() -> None:
    ranks = [[node(1, 5 + 10 * r), collective(2, (1,)), node(3, 1, (2,)), collective(4)]
             for r in range(3)]  # fmt: skip
    graphs = [build_graph(nodes, rank) for rank, nodes in enumerate(ranks)]
    times = sweep(graphs, None, [take_order(g) for g in graphs], [0.0] * 3)
    assert times is not None  # taken by the sweep, not handed on
    for r, (starts, ends) in enumerate(times):
        assert starts.tolist() == [0, 5 + 10 * r, 35, 35]  # 4 waits for 2 on stream 9
        assert ends.tolist() == [5 + 10 * r, 35, 36, 45]


def test_ranks_meeting_in_an_order_the_sweep_cannot_follow() -> None:
    # rank 0 reaches group "a" first, rank 1 group "b": independent streams, no deadlock
    rank0 = [collective(1, stream=7, pg="a"), collective(2, stream=8, pg="b")]
    rank1 = [collective(1, stream=8, pg="b"), collective(2, stream=7, pg="a")]
    graphs = [build_graph(rank0, 0), build_graph(rank1, 1)]
    assert sweep(graphs, None, [take_order(g) for g in graphs], [0.0, 0.0]) is None
    engine = Engine(graphs)
    engine.run()
    assert outcome(engine) == outcome(ReferenceEngine(graphs))


@pytest.mark.parametrize("measured", [False, True])
def test_take_order_is_the_priority_sort(measured: bool) -> None:
    # ids against node order; measured starts against ids
    nodes = [node(5, 1), node(2, 1), node(9, 1, (2,)), node(1, 1, (9,))]
    if measured:
        for n, start in zip(nodes, (30, 40, 10, 20)):
            n.start_time_micros = start
    order = take_order(build_graph(nodes)).tolist()
    # by id, 2 then 5 (9 waits for 2, 1 for 9); measured, 5 (30) then 2 (40), then 9 (10)
    assert order == ([0, 1, 2, 3] if measured else [1, 0, 2, 3])
    assert np.array_equal(take_order(build_graph([])), [])
