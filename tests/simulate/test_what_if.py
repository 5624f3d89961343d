"""What-if runs on hand-made graphs: makespans and changes worked out by hand, the replay
left untouched, and the skip-or-adapt policy for rules that match no node."""

from __future__ import annotations

import logging
from array import array

import pytest

from chakra.errors import ChakraError
from chakra.simulate.analysis import ScaleRule
from chakra.simulate.network import NetworkModel
from chakra.simulate.scenarios import (
    DEFAULT_SCENARIOS,
    Scenario,
    run_scenarios,
    run_what_if,
)
from tests.simulate.test_engine import node, simulate


def cpu_then_kernel() -> list:
    # cpu 1 (0-10) launches kernel 2 (stream 7, 10-50); cpu 3 (50-55) waits for the kernel
    return [node(1, 10), node(2, 40, (1,), stream=7), node(3, 5, (2,))]


def rules(*texts: str) -> list[ScaleRule]:
    return [ScaleRule.parse(text) for text in texts]


def test_what_if_makespans_and_the_replay_left_as_it_was() -> None:
    engine = simulate(cpu_then_kernel())
    durations = array("d", engine.graphs[0].duration_us)
    starts, ends = array("d", engine.start[0]), array("d", engine.end[0])
    result = run_what_if(engine, rules("gpu=0.5"), name="faster")
    (rank,) = result.ranks
    assert (rank.replay_makespan_us, rank.makespan_us) == (55, 35)  # 10 + 20 + 5
    assert rank.change_pct == pytest.approx(100 * (35 - 55) / 55)
    assert (result.name, result.rules, result.nodes_matched) == ("faster", ["gpu=0.5"], [1])
    assert engine.graphs[0].duration_us == durations
    assert (engine.start[0], engine.end[0]) == (starts, ends)
    assert engine.graphs[0].duration_factor is None


def test_what_if_with_a_network_model() -> None:
    engine = simulate([node(1, 10), node(2, 40, (1,), stream=7, coll="0")],
                      [node(1, 10), node(2, 40, (1,), stream=7, coll="0")])  # fmt: skip
    result = run_what_if(engine, [], NetworkModel.parse("ring:100:5"))
    assert result.network == "ring:100:5" and result.rules == []
    # an all-reduce of 0 bytes on a ring of 2: 2 steps of 5 us
    assert [r.makespan_us for r in result.ranks] == [20, 20]


def test_a_rule_matching_nothing_is_an_error_in_the_library_call() -> None:
    engine = simulate(cpu_then_kernel())
    with pytest.raises(ChakraError, match=r"--scale comm=0\.5: matches no node"):
        run_what_if(engine, rules("comm=0.5"))


def test_default_scenarios_adapt_and_user_scenarios_are_skipped_whole(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = simulate(cpu_then_kernel())  # no communication, no [delay] or [idle] nodes
    by_name = {w.name: w for w in run_scenarios(engine, DEFAULT_SCENARIOS, adapt=True)}
    gpu = by_name["GPU compute 2x faster"]  # its comm=2 matches nothing: left out
    assert gpu.rules == ["gpu=0.5"] and gpu.ranks[0].makespan_us == 35
    assert gpu.note == "left out comm=2, which matches no node"
    assert by_name["communication 2x faster"].ranks == []  # the first rule matches nothing
    assert by_name["communication 2x faster"].note == "skipped: comm=0.5 matches no node"
    assert by_name["CPU 2x faster"].ranks[0].makespan_us == 47.5  # 5 + 40 + 2.5
    assert by_name["no unexplained time"].note == "skipped: delay=0, idle=0 match no node"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    mine = Scenario.parse("both=gpu=0.5,comm=0.5")
    (skipped,) = run_scenarios(engine, [mine])
    assert skipped.ranks == [] and skipped.nodes_matched == [1, 0]
    assert skipped.note == "skipped: comm=0.5 matches no node"
    assert "what-if 'both' skipped: comm=0.5 matches no node" in caplog.text


@pytest.mark.parametrize(
    ("text", "message"),
    [("gpu=0.5", "--what-if 'gpu=0.5': rule '0.5' of scenario 'gpu': expected "
                 "TARGET=FACTOR, e.g. compute=0.5 (a scenario is NAME=RULE[,RULE...])"),
     ("fast=", "--what-if 'fast=': expected NAME=RULE[,RULE...]"),
     ("=gpu=0.5", "--what-if '=gpu=0.5': expected NAME=RULE[,RULE...]"),
     ("fast=gpu=-1", "--what-if 'fast=gpu=-1': rule 'gpu=-1' of scenario 'fast': factor "
                     "must not be negative"),
     ("fast=gpu=0.5,,", "--what-if 'fast=gpu=0.5,,': rule '' of scenario 'fast': expected "
                        "TARGET=FACTOR")],
)  # fmt: skip
def test_bad_scenarios(text: str, message: str) -> None:
    with pytest.raises(ChakraError) as info:
        Scenario.parse(text)
    assert str(info.value).startswith(message)


def test_scenario_parse() -> None:
    scenario = Scenario.parse("GPU 2x faster = gpu=0.5, name:[delay]=0")
    assert scenario.name == "GPU 2x faster"
    assert [(r.target, r.factor) for r in scenario.rules] == [("gpu", 0.5), ("name:[delay]", 0)]
