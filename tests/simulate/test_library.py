"""The library's one model and one result: ``simulate`` and ``what_if`` return a frozen
``SimResult`` and leave the graphs they are given as they were."""

from __future__ import annotations

from array import array

import numpy as np
import pytest

from chakra.simulate import (
    PathEntry,
    ScaleRule,
    SimOptions,
    SimResult,
    build_graph,
    rank_results,
    simulate,
    what_if,
)
from chakra.simulate.replay import replay
from tests.simulate.test_engine import node


def graphs() -> list:
    # cpu 1 (0-10) launches kernel 2 (stream 7, 10-50); cpu 3 (50-55) waits for the kernel
    return [build_graph([node(1, 10), node(2, 40, (1,), stream=7), node(3, 5, (2,))])]


def test_simulate_fills_the_summaries_once() -> None:
    result = simulate(graphs())
    assert isinstance(result, SimResult)
    assert list(result.start[0]) == [0.0, 10.0, 50.0]
    assert list(result.end[0]) == [10.0, 50.0, 55.0]
    assert result.makespans() == [55.0]
    (rank,) = result.ranks
    assert rank == rank_results(result, explain=True)[0]
    assert rank.model_only_makespan_us == 55.0  # asked by default
    assert result.critical_paths == ((PathEntry("n2", 40.0), PathEntry("n1", 10.0),
                                      PathEntry("n3", 5.0)),)  # fmt: skip
    assert simulate(graphs(), SimOptions(explain=False)).ranks[0].model_only_makespan_us is None


def test_the_result_and_its_graphs_cannot_be_changed() -> None:
    result = simulate(graphs())
    with pytest.raises(AttributeError):
        result.ranks = ()  # type: ignore[misc]
    with pytest.raises(AttributeError):
        result.graphs[0].duration_us = array("d")  # type: ignore[misc]
    with pytest.raises(TypeError):
        result.start[0][0] = 5.0
    with pytest.raises(ValueError):
        np.frombuffer(result.end[0], np.float64)[0] = 5.0


def test_what_if_leaves_its_graphs_alone() -> None:
    given = graphs()
    before = given[0].duration_us.tolist()
    faster = what_if(given, [ScaleRule.parse("gpu=0.5")])
    assert faster.makespans() == [35.0] and faster.nodes_matched == (1,)
    assert given[0].duration_us.tolist() == before and given[0].duration_factor is None
    assert faster.graphs[0] is not given[0]


def test_replay_runs_the_what_if_only_when_asked() -> None:
    plain = replay(graphs())
    assert plain.what_if is None and plain.what_if_makespans() == [None]
    scaled = replay(graphs(), [ScaleRule.parse("cpu=2")])
    assert scaled.what_if_makespans() == [70.0]  # 20 + 40 + 10
    assert scaled.result.makespans() == [55.0]
