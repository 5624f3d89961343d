"""``chakra_sim --scale`` and ``chakra_pipeline --what-if`` with instance qualifiers
(``@shape:``, ``@scope:``, ``@rank:``) on the hand-built two-layer graph of
tests/simulate/test_instance_rules.py: the matched count printed, the what-if makespan, a
qualifier matching nothing (status 1) and one that does not parse (usage error, status 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chakra.et import GlobalMetadata, write_et
from tests.cli.conftest import Runner, Traces
from tests.simulate.test_instance_rules import FC1, two_layers


@pytest.fixture
def et_file(tmp_path: Path) -> Path:
    path = tmp_path / "rank0.et"
    write_et(path, GlobalMetadata(version="0.0.4"), two_layers())
    return path


def test_a_shape_rule_prints_how_many_nodes_it_scaled(cli: Runner, et_file: Path) -> None:
    result = cli("sim", et_file, "--scale", f"aten::addmm@shape:{FC1}=2")
    assert result.status == 0, result.errors
    lines = result.stdout.splitlines()
    assert lines[0] == f"--scale aten::addmm@shape:{FC1}=2: 2 nodes scaled (all ranks)"
    assert lines[1].endswith("simulated 158 us")  # a chain: the sum of its durations
    assert lines[3].startswith("  what-if makespan 183 us")  # the addmm (20), its segment (5)


def test_scope_and_rank_rules_in_json(cli: Runner, et_file: Path) -> None:
    rules = ["gpu@scope:*layers.1*=0.5", "aten::addmm@scope:*layers.0*@rank:0=0"]
    result = cli("sim", et_file, "--json", *(f"--scale={rule}" for rule in rules))
    assert result.status == 0, result.errors
    document = json.loads(result.stdout)
    assert document["scale_rules"] == [{"rule": rules[0], "nodes": 1},
                                       {"rule": rules[1], "nodes": 1}]  # fmt: skip
    assert document["ranks"][0]["what_if_makespan_us"] == 158 - 40 - 10


def test_a_qualifier_matching_nothing_is_one_line(cli: Runner, et_file: Path) -> None:
    rule = "aten::addmm@shape:[8,512]=2"
    cli("sim", et_file, "--scale", rule).one_line(1, f"--scale {rule}: matches no node")
    rank = "aten::addmm@rank:1=2"
    cli("sim", et_file, "--scale", rank).one_line(1, f"--scale {rank}: matches no node")


@pytest.mark.parametrize(("rule", "message"), [
    ("aten::addmm@shap:[1]=2", "unknown qualifier @shap: (expected @shape:, @scope:, @rank: or"),
    ("aten::addmm@shape:[8,=2", "@shape:[8, is not a shape; expected e.g. @shape:[8,256]"),
    ("aten::addmm@rank:x=2", "@rank:x: expected @rank:0, @rank:0|2 or @rank:4-7"),
])  # fmt: skip
def test_a_bad_qualifier_is_a_usage_error(cli: Runner, et_file: Path, tmp_path: Path,
                                          rule: str, message: str) -> None:  # fmt: skip
    timeline = tmp_path / "t.json"
    result = cli("sim", et_file, "--scale", rule, "--timeline", timeline)
    line = result.one_line(2, f"argument --scale: {rule}: {message}")
    assert line.startswith("chakra_sim: error: ") and result.stdout == ""
    assert not timeline.exists()


def test_pipeline_what_if_takes_qualifiers_and_refuses_bad_ones(
    cli: Runner, traces: Traces, tmp_path: Path
) -> None:
    base = ["--host-trace", traces.host, "--device-trace", traces.kineto,
            "--output-dir", tmp_path / "out"]  # fmt: skip
    bad = cli("pipeline", *base, "--what-if", f"wide=aten::addmm@shape:{FC1}=2,gpu@rank:=2")
    bad.one_line(2, "rule 'gpu@rank:=2' of scenario 'wide': @rank: needs a value")
    assert not (tmp_path / "out").exists()


def test_help_documents_the_qualifiers(cli: Runner) -> None:
    sim = ("@shape:[8,16]", "@scope:PATTERN", "@rank:0|2")
    pipeline = ("@shape:, @scope:, @rank:", "commas inside [ ]")
    for tool, words in (("sim", sim), ("pipeline", pipeline)):
        result = cli(tool, "--help")
        text = " ".join(result.stdout.split())
        assert all(w in text for w in words), text
