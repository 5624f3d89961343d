"""Critical path, what the graph explains, what-if scaling and the reference-style log lines."""

from __future__ import annotations

import logging
import random

import pytest

from chakra.errors import ChakraError
from chakra.simulate import PathEntry, SimResult, build_graph, rank_results, what_if
from chakra.simulate.analysis import (
    ScaleRule,
    critical_chain,
    critical_path,
    log_reference_lines,
    scaled_graphs,
    unexplained_on_path,
)
from tests.simulate.test_engine import node, simulate


def run(nodes: list) -> SimResult:
    return simulate(nodes)


def graph_nodes() -> list:
    # cpu 1 (10) launches gemm 2 (50, stream 7) and nccl 3 (20, stream 8, collective);
    # cpu 4 (5) waits for the gemm
    return [node(1, 10), node(2, 50, (1,), stream=7), node(3, 20, (1,), stream=8, coll="0"),
            node(4, 5, (2,))]  # fmt: skip


def test_critical_path_follows_binding_constraints() -> None:
    engine = run(graph_nodes())
    assert critical_path(engine) == [
        PathEntry("n2", 50.0),
        PathEntry("n1", 10.0),
        PathEntry("n4", 5.0),
    ]


@pytest.mark.parametrize(("rule", "makespan"), [
    ("gpu=0.5", 40.0),        # 10 + 25 + 5
    ("compute=2", 130.0),     # gemm and cpu ops doubled: 20 + 100 + 10 (nccl is comm)
    ("comm=10", 210.0),       # the collective now dominates: 10 + 200
    ("n2=0", 30.0),           # name pattern: gemm takes 0; nccl ends at 30, cpu 4 at 15
])  # fmt: skip
def test_scale_rules(rule: str, makespan: float) -> None:
    engine = run(graph_nodes())
    assert rank_results(engine)[0].simulated_makespan_us == 65.0
    scaled = what_if(engine.graphs, [ScaleRule.parse(rule)])
    assert rank_results(scaled)[0].simulated_makespan_us == makespan
    assert list(engine.graphs[0].duration_us) == [10, 50, 20, 5]  # the replayed graph kept


@pytest.mark.parametrize(("text", "message"), [
    ("gpu", "--scale gpu: expected TARGET=FACTOR"),
    ("=2", "--scale =2: expected TARGET=FACTOR"),
    ("name:=2", "--scale name:=2: expected TARGET=FACTOR"),
    ("gpu=fast", "--scale gpu=fast: factor must be a number"),
    ("gpu=nan", "--scale gpu=nan: factor must be a number"),
    ("gpu=-1", "--scale gpu=-1: factor must not be negative"),
])  # fmt: skip
def test_bad_scale_rule(text: str, message: str) -> None:
    with pytest.raises(ChakraError) as error:
        ScaleRule.parse(text)
    assert str(error.value).startswith(message)


def delay_graph() -> list:
    # thread 1: A (10), [idle] (3), B (10), B also waiting for a [delay] (5) after A;
    # GPU kernel K (4) launched by A. Measured: A at 100, idle 110, delay 110, B 115, K 111.
    a, idle, delay, b = node(1, 10), node(2, 3), node(3, 5, (1,), tid=None), node(4, 10, (3,))
    idle.name, delay.name, b.name = "[idle]", "[delay]", "nB[1]"
    kernel = node(5, 4, (1,), stream=7)
    for item, start in zip((a, idle, delay, b, kernel), (100, 110, 110, 115, 111)):
        item.start_time_micros = start
    return [a, idle, delay, b, kernel]


def test_model_only_makespan_and_unexplained_time() -> None:
    # A -> [delay] (5) -> B on one thread: replay 25, with the delay zeroed 20 (the idle
    # node, 3, sits beside the delay and ends first: it binds neither run)
    engine = run(delay_graph())
    (result,) = rank_results(engine, explain=True)
    assert (result.simulated_makespan_us, result.measured_makespan_us) == (25.0, 25.0)
    assert result.model_only_makespan_us == 20.0
    assert result.model_only_error_pct == -20.0
    assert result.unexplained_us == 5.0
    assert critical_path(engine) == [
        PathEntry("nB[1]", 10.0),
        PathEntry("n1", 10.0),
        PathEntry("[delay]", 5.0),
    ]
    assert rank_results(engine)[0].model_only_makespan_us is None  # only when asked


def test_idle_time_on_the_critical_path() -> None:
    # the idle gap (8) now outlasts the delay (5): B waits for it on its thread
    nodes = delay_graph()
    nodes[1].duration_micros = 8
    engine = run(nodes)
    (result,) = rank_results(engine, explain=True)
    assert result.simulated_makespan_us == 28.0  # 10 + 8 + 10
    assert (result.model_only_makespan_us, result.unexplained_us) == (20.0, 8.0)
    assert unexplained_on_path(engine) == 8.0


@pytest.mark.parametrize(("rules", "counts", "durations"), [
    (["cpu=0.5"], [2], [5, 3, 5, 5, 4]),          # ops only: [idle] and [delay] keep theirs
    (["compute=0"], [3], [0, 3, 5, 0, 0]),
    (["delay=2", "idle=0"], [1, 1], [10, 0, 10, 10, 4]),
    (["[delay]=0"], [1], [10, 3, 0, 10, 4]),      # brackets stand for themselves
    (["name:[idle]=2"], [1], [10, 6, 5, 10, 4]),
    (["nB[1]=3"], [1], [10, 3, 5, 30, 4]),
    (["n*=2", "*=3"], [3, 3], [60, 3, 5, 60, 24]),  # wildcards reach ops only; factors multiply
    (["[*=0"], None, None),                        # no op name starts with [
])  # fmt: skip
def test_scale_targets(rules: list, counts: list, durations: list) -> None:
    graph = build_graph(delay_graph())
    parsed = [ScaleRule.parse(text) for text in rules]
    if counts is None:
        with pytest.raises(ChakraError, match=r"^--scale \[\*=0: matches no node$"):
            scaled_graphs([graph], parsed)
        return
    (scaled,), matched = scaled_graphs([graph], parsed)
    assert matched == counts
    assert list(scaled.duration_us) == durations


def test_a_rule_counts_matches_in_every_rank() -> None:
    ranks = [build_graph(graph_nodes(), 0), build_graph(delay_graph(), 1)]
    assert scaled_graphs(ranks, [ScaleRule.parse("gpu=2")])[1] == [3]  # 2 + 1 kernels
    assert scaled_graphs(ranks, [ScaleRule.parse("idle=2")])[1] == [1]  # rank 1 only
    with pytest.raises(ChakraError, match=r"^--scale foo=2: matches no node$"):
        scaled_graphs(ranks, [ScaleRule.parse("gpu=2"), ScaleRule.parse("foo=2")])


def test_reference_log_lines(caplog: pytest.LogCaptureFixture) -> None:
    engine = run(graph_nodes())
    with caplog.at_level(logging.DEBUG, logger="chakra.simulate.trace"):
        log_reference_lines(engine)
    lines = [record.getMessage() for record in caplog.records]
    assert "Issuing CPU Node ID 1 (n1) at 0us with duration 10us, tid: 1" in lines
    assert "GPU Node ID 2 on stream 7 completed at 60us, tid: stream 7" in lines
    assert len(lines) == 8


def walked_chain(result: SimResult, rank: int) -> list[int]:
    """:func:`critical_chain` as a walk that looks at each chain node's dependencies in
    turn (the vectorised one must agree with it)."""
    graph, start, end = result.graphs[rank], result.start[rank], result.end[rank]
    by_resource: dict[int, list[int]] = {}
    for i, resource in enumerate(graph.resource):
        if resource >= 0:
            by_resource.setdefault(resource, []).append(i)
    previous = [-1] * len(graph.ids)
    for nodes in by_resource.values():
        ordered = sorted(nodes, key=lambda i: (start[i], end[i], i))
        for before, after in zip(ordered, ordered[1:]):
            previous[after] = before
    node, chain = max(range(len(end)), key=lambda i: (end[i], -i)), []
    while node >= 0 and node not in chain:
        chain.append(node)
        begins = start[node]
        deps = graph.preds[graph.pred_start[node] : graph.pred_start[node + 1]]
        bound = [d for d in deps if abs(end[d] - begins) < 1e-9]
        candidate = previous[node]
        if bound:
            node = bound[0]
        elif candidate >= 0 and abs(end[candidate] - begins) < 1e-9:
            node = candidate
        else:
            node = -1
    return chain


@pytest.mark.parametrize("seed", range(6))
def test_the_critical_chain_is_the_walk_over_each_nodes_dependencies(seed: int) -> None:
    """Random graphs with ties (zero durations, shared dependencies, two threads and
    streams): each step takes the first dependency in data_deps order that ends when the
    node starts, else the resource's previous node."""
    rng = random.Random(seed)
    nodes = []
    for i in range(1, 400):
        deps = tuple(rng.sample(range(1, i), min(i - 1, rng.randint(0, 3))))
        place = (
            {"tid": rng.choice((1, 2))} if rng.random() < 0.5 else {"stream": rng.choice((7, 8))}
        )
        nodes.append(node(i, rng.choice((0, 0, 1, 2, 5)), deps, **place))
    result = simulate(nodes)
    assert len(walked_chain(result, 0)) > 20
    assert critical_chain(result, 0) == walked_chain(result, 0)
    scaled = what_if(result.graphs, [ScaleRule.parse("gpu=0")])
    assert critical_chain(scaled, 0) == walked_chain(scaled, 0)
