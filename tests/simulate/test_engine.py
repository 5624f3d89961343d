"""The simulation engine on hand-made graphs, and its invariants on random ones."""

from __future__ import annotations

from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chakra.et import Node, NodeType, set_attr
from chakra.simulate import (
    SimOptions,
    SimResult,
    SimulationError,
    build_graph,
    rank_results,
)
from chakra.simulate import simulate as simulate_graphs


def node(node_id: int, duration: int, deps: tuple = (), *, tid: Optional[int] = 1,
         stream: Optional[int] = None, coll: Optional[str] = None) -> Any:  # fmt: skip
    out = Node(id=node_id, name=f"n{node_id}", duration_micros=duration, data_deps=list(deps),
               type=NodeType.COMM_COLL_NODE if coll else NodeType.COMP_NODE)  # fmt: skip
    if stream is None:
        set_attr(out, "is_cpu_op", True)
        if tid is not None:
            set_attr(out, "tid", tid)
    else:
        set_attr(out, "is_cpu_op", False)
        set_attr(out, "stream", stream)
    if coll:
        set_attr(out, "comm_type", 0)
        set_attr(out, "pg_name", coll)
    return out


def simulate(*ranks: list) -> SimResult:
    """The library's run of one graph per rank (rank = position), without the model-only run."""
    graphs = [build_graph(nodes, rank) for rank, nodes in enumerate(ranks)]
    return simulate_graphs(graphs, SimOptions(explain=False))


def times(engine: SimResult, rank: int = 0) -> list[tuple[float, float]]:
    return list(zip(engine.start[rank], engine.end[rank]))


def test_thread_and_streams_overlap() -> None:
    # a CPU op launches two kernels on different streams; a third waits for both
    engine = simulate([node(1, 10), node(2, 30, (1,), stream=7), node(3, 20, (1,), stream=8),
                       node(4, 5, (2, 3))])  # fmt: skip
    assert times(engine) == [(0, 10), (10, 40), (10, 30), (40, 45)]
    (result,) = rank_results(engine)
    assert result.simulated_makespan_us == 45


def test_one_stream_runs_its_work_in_order() -> None:
    # two independent kernels on one stream cannot overlap; node order decides
    engine = simulate([node(1, 10, stream=7), node(2, 10, stream=7)])
    assert times(engine) == [(0, 10), (10, 20)]


def test_serialized_gpu_is_the_reference_without_streams() -> None:
    nodes = [node(1, 10, stream=7), node(2, 10, stream=8)]
    parallel = simulate_graphs([build_graph(nodes)])
    serial = simulate_graphs([build_graph(nodes, serialize_gpu=True)])
    assert rank_results(parallel)[0].simulated_makespan_us == 10
    assert rank_results(serial)[0].simulated_makespan_us == 20


def test_zero_duration_and_no_resource() -> None:
    engine = simulate([node(1, 0), node(2, 7, (1,), tid=None), node(3, 7, (1,), tid=None)])
    assert times(engine) == [(0, 0), (0, 7), (0, 7)]  # no resource: no waiting


def test_collective_starts_when_every_rank_is_ready() -> None:
    rank0 = [node(1, 100), node(2, 50, (1,), stream=9, coll="0")]
    rank1 = [node(1, 10), node(2, 140, (1,), stream=9, coll="0")]
    engine = simulate(rank0, rank1)
    # each holds its stream from its own arrival; both end at the latest arrival (100)
    # plus the shortest recorded time (50)
    assert times(engine, 0)[1] == (100, 150)
    assert times(engine, 1)[1] == (10, 150)


def test_a_collective_without_a_thread_still_meets() -> None:
    # a gloo collective the link left off every host thread (no tid): it holds no resource,
    # but it is still rank 0's collective #0 and #1, so both ranks meet twice (before, rank
    # 0 passed it without meeting and rank 1 waited forever at #1: a deadlock)
    rank0 = [node(1, 30), node(2, 20, (1,), tid=None, coll="0"),
             node(3, 20, (2,), tid=None, coll="0")]  # fmt: skip
    rank1 = [node(1, 10), node(2, 5, (1,), coll="0"), node(3, 5, (2,), coll="0")]
    engine = simulate(rank0, rank1)
    # meets at 30 (rank 0's arrival), each ends after the shortest recorded time (5)
    assert times(engine, 0)[1:] == [(30, 35), (35, 40)]
    assert times(engine, 1)[1:] == [(10, 35), (35, 40)]


def test_missing_collective_is_a_deadlock_naming_ranks() -> None:
    rank0 = [node(1, 1, stream=9, coll="0"), node(2, 1, (1,), stream=9, coll="0")]
    rank1 = [node(1, 1, stream=9, coll="0")]
    with pytest.raises(SimulationError, match=r"communication #1 of group '0' .* rank\(s\) \[1\]"):
        simulate(rank0, rank1)


def test_a_deadlock_of_collectives_without_a_group_says_the_groups_are_unknown() -> None:
    def without_group(made: Any) -> Any:
        kept = [a for a in made.attr if a.name != "pg_name"]
        del made.attr[:]
        made.attr.extend(kept)
        return made

    rank0 = [without_group(node(1, 1, stream=9, coll="0")),
             without_group(node(2, 1, (1,), stream=9, coll="0"))]  # fmt: skip
    rank1 = [without_group(node(1, 1, stream=9, coll="0"))]
    with pytest.raises(SimulationError, match=r"group '' .* name no process group"):
        simulate(rank0, rank1)
    with pytest.raises(SimulationError) as named:
        simulate([node(1, 1, stream=9, coll="0"), node(2, 1, (1,), stream=9, coll="0")],
                 [node(1, 1, stream=9, coll="0")])  # fmt: skip
    assert "name no process group" not in str(named.value)


def test_unknown_dependency_and_cycle() -> None:
    with pytest.raises(SimulationError, match=r"node 2 .* depends on unknown node 9"):
        build_graph([node(1, 1), node(2, 1, (9,))])
    with pytest.raises(SimulationError, match="2 nodes never ran"):
        simulate([node(1, 1, (2,)), node(2, 1, (1,)), node(3, 1)])


@st.composite
def dags(draw: st.DrawFn) -> list:
    count = draw(st.integers(1, 25))
    nodes = []
    for i in range(count):
        deps = draw(st.sets(st.integers(0, i - 1), max_size=3)) if i else set()
        resource = draw(st.sampled_from(["t1", "t2", "s7", "s8", "none"]))
        kwargs: dict[str, Any] = (
            {"tid": None}
            if resource == "none"
            else ({"tid": int(resource[1])} if resource[0] == "t" else {"stream": int(resource[1])})
        )
        nodes.append(node(i + 1, draw(st.integers(0, 50)), tuple(d + 1 for d in deps), **kwargs))
    return nodes  # fmt: skip


def makespan(nodes: list) -> float:
    engine = simulate(nodes)
    return max(engine.end[0]) if nodes else 0.0


def longest_path(nodes: list) -> float:
    finish: dict[int, float] = {}
    for n in nodes:  # ids ascend with dependencies
        finish[n.id] = max((finish[d] for d in n.data_deps), default=0.0) + n.duration_micros
    return max(finish.values())


@settings(max_examples=150, deadline=None)
@given(dags())
@pytest.mark.slow
def test_makespan_bounds(nodes: list) -> None:
    span = makespan(nodes)
    assert span >= longest_path(nodes)
    engine = simulate(nodes)
    for use in rank_results(engine)[0].resources:
        assert use.busy_us <= span


@settings(max_examples=150, deadline=None)
@given(dags(), st.data())
@pytest.mark.slow
def test_adding_an_edge_never_shortens(nodes: list, data: st.DataObject) -> None:
    if len(nodes) < 2:
        return
    later = data.draw(st.integers(1, len(nodes) - 1))
    earlier = data.draw(st.integers(0, later - 1))
    extended = [Node() for _ in nodes]
    for copy, original in zip(extended, nodes):
        copy.CopyFrom(original)
    if nodes[earlier].id not in extended[later].data_deps:
        extended[later].data_deps.append(nodes[earlier].id)
    assert makespan(extended) >= makespan(nodes)


@settings(max_examples=100, deadline=None)
@given(dags())
def test_without_edges_the_busiest_resource_decides(nodes: list) -> None:
    for n in nodes:
        del n.data_deps[:]
    engine = simulate(nodes)
    (result,) = rank_results(engine)
    loads = [use.busy_us for use in result.resources]
    unbound = [n.duration_micros for i, n in enumerate(nodes) if engine.graphs[0].resource[i] < 0]
    assert max(engine.end[0]) == max(loads + unbound)
