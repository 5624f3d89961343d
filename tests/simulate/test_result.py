"""Per-rank summaries: the model-only run is left out when it would be the replay itself
(no ``[delay]`` or ``[idle]`` node in any rank), with the same numbers; resource busy times
are the sums a loop over the nodes makes, floats even where no node ran."""

from __future__ import annotations

from array import array
from typing import Any

import msgspec
import numpy as np
import pytest

import chakra.simulate.analysis as analysis
from chakra.et import Node, NodeType, set_attr
from chakra.simulate import build_graph, simulate
from chakra.simulate.analysis import DELAY, IDLE, unexplained_by_kind, unexplained_nodes
from chakra.simulate.result import rank_results
from chakra.simulate.sim_graph import NO_RESOURCE, SimGraph
from chakra.simulate.sim_result import SimResult
from chakra.simulate.times import rerun


def graph(rank: int, names: dict[int, str]) -> SimGraph:
    """A host thread launching GPU kernels on two streams, 40 nodes; ``names`` renames
    some (``[delay]``, ``[idle]``)."""
    nodes = []
    for i in range(0, 40, 2):
        host = Node(id=i, name=names.get(i, "aten::op"), type=NodeType.COMP_NODE,
                    duration_micros=3 + i % 5, start_time_micros=10 * i + 1)  # fmt: skip
        if i:
            host.data_deps.append(i - 2)
        set_attr(host, "is_cpu_op", True)
        set_attr(host, "tid", 1)
        kernel = Node(id=i + 1, name=names.get(i + 1, "kernel"), type=NodeType.COMP_NODE,
                      duration_micros=7 + i % 3, data_deps=[i])  # fmt: skip
        set_attr(kernel, "is_cpu_op", False)
        set_attr(kernel, "stream", 7 + i % 2)
        nodes += [host, kernel]
    return build_graph(nodes, rank)


class CountedReruns:
    def __init__(self, monkeypatch: Any) -> None:
        self.count = 0
        original = analysis.rerun

        def counted(*args: Any) -> Any:
            self.count += 1
            return original(*args)

        monkeypatch.setattr(analysis, "rerun", counted)


def forced(result: SimResult) -> list[tuple]:
    """The explained fields as a model-only run gives them, run whatever the graphs: each
    ``[delay]`` and ``[idle]`` node's duration zeroed."""
    graphs = []
    for g in result.graphs:
        durations = array("d", g.duration_us)
        for i in np.flatnonzero(unexplained_nodes(g)).tolist():
            durations[i] = 0.0
        graphs.append(msgspec.structs.replace(g, duration_us=durations))
    model = rerun(result, graphs)
    fields = []
    for r in range(len(result.graphs)):
        alone = max(model.end[r]) - min(model.start[r])
        fields.append((alone, *unexplained_by_kind(result, r)))
    return fields


def explained(result: SimResult) -> list[tuple]:
    return [(r.model_only_makespan_us, r.unexplained_us, r.delay_us)
            for r in rank_results(result, explain=True)]  # fmt: skip


def test_without_unexplained_nodes_the_model_only_run_is_the_replay(monkeypatch: Any) -> None:
    result = simulate([graph(0, {}), graph(1, {})], None)
    reruns = CountedReruns(monkeypatch)
    got = explained(result)
    assert reruns.count == 0
    want = [(alone, delay + idle, delay) for alone, delay, idle in forced(result)]
    assert got == want
    assert all(type(value) is float for row in got for value in row)


@pytest.mark.parametrize("rank_with", [0, 1])
def test_one_rank_with_unexplained_nodes_runs_the_model_only_run(
    monkeypatch: Any, rank_with: int
) -> None:
    names = {4: DELAY, 9: IDLE}
    graphs = [graph(r, names if r == rank_with else {}) for r in range(2)]
    result = simulate(graphs, None)
    reruns = CountedReruns(monkeypatch)
    got = explained(result)
    assert reruns.count == 1
    assert got == [(alone, delay + idle, delay) for alone, delay, idle in forced(result)]


def test_busy_times_are_the_node_loops_sums() -> None:
    """In node order, as floats; a resource none of whose nodes is ``[idle]`` has 0.0
    unexplained time (a float: ``--json`` prints 0.0)."""
    result = simulate([graph(0, {6: IDLE, 11: DELAY}), graph(1, {})], None)
    for r, summary in enumerate(rank_results(result)):
        g, start, end = result.graphs[r], result.start[r], result.end[r]
        busy, idle = [0.0] * len(g.resources), [0.0] * len(g.resources)
        for i, resource in enumerate(g.resource):
            if resource != NO_RESOURCE:
                (idle if g.names[i] in (DELAY, IDLE) else busy)[resource] += end[i] - start[i]
        assert [u.busy_us for u in summary.resources] == busy
        assert [u.unexplained_us for u in summary.resources] == idle
        assert all(type(u.unexplained_us) is float for u in summary.resources)
        assert msgspec.json.encode(summary.resources).count(b'"unexplained_us":0.0') == (
            idle.count(0.0)
        )
