"""The per-step breakdown (``ProfilerStep#N``), checked against step durations read from the
raw Kineto JSON (a synthetic job) and against the step times that
tests/data/pytorch213/gloo_net/README.md states for the real gloo recordings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chakra.pipeline import RankFiles, run_pipeline
from chakra.simulate import SimOptions, build_graph, simulate
from chakra.synth import SynthOptions, generate_job
from chakra.views import step_breakdown
from chakra.views.steps import StepStat
from tests.simulate.test_engine import node

GLOO_NET = Path(__file__).resolve().parents[1] / "data" / "pytorch213" / "gloo_net"
KIND_FIELDS = ("cpu_us", "gpu_us", "communication_us", "launch_us", "unexplained_us")


def check_kinds_fit(step: StepStat) -> None:
    for field in KIND_FIELDS:
        assert 0 <= getattr(step, field) <= step.simulated_us + 1e-6, field


def test_a_hand_made_step() -> None:
    # ProfilerStep#4 (thread 1, 0-10) launches kernel 2 (stream 7, 10-40); ProfilerStep#5
    # (40-45) waits for it. A step spans its own host op: step 4 is 0-10 (the kernel runs
    # after it), step 5 40-45.
    first, second = node(1, 10), node(5, 5, (2,))
    first.name, second.name = "ProfilerStep#4", "ProfilerStep#5"
    result = simulate([build_graph([first, node(2, 30, (1,), stream=7), second], 0)],
                      SimOptions(explain=False))  # fmt: skip
    four, five = step_breakdown(result)
    assert (four.step, four.start_us, four.simulated_us, four.cpu_us, four.gpu_us) == (
        4, 0, 10, 10, 0)  # fmt: skip
    assert (five.step, five.start_us, five.simulated_us, five.cpu_us) == (5, 40, 5, 5)
    assert four.measured_us is None and four.error_pct is None  # nothing measured
    assert step_breakdown(simulate([build_graph([node(1, 3)], 0)])) == []


def test_synthetic_steps_match_the_kineto_step_events(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    generate_job(SynthOptions(seed=4, ranks=2, steps=3, ops_per_step=50), traces)
    ranks = [RankFiles(r, traces / f"rank{r}.host_et.json", traces / f"rank{r}.kineto.json")
             for r in range(2)]  # fmt: skip
    out = run_pipeline(ranks, tmp_path / "out", plot=False, what_if=())
    report = json.loads(out.report.read_text())
    for entry in report["ranks"]:
        kineto = json.loads((traces / f"rank{entry['rank']}.kineto.json").read_text())
        recorded = {int(e["name"].split("#")[1]): e["dur"] for e in kineto["traceEvents"]
                    if e.get("name", "").startswith("ProfilerStep#")}  # fmt: skip
        steps = [StepStat(**s) for s in entry["views"]["steps"]]
        assert [s.step for s in steps] == sorted(recorded) == [0, 1, 2]
        for step in steps:
            assert step.measured_us == pytest.approx(recorded[step.step], rel=1e-3)
            assert step.simulated_us == pytest.approx(recorded[step.step], rel=0.02)
            assert step.gpu_us > 0 and step.communication_us > 0
            check_kinds_fit(step)
        starts = [s.start_us for s in steps]
        assert starts == sorted(starts) and starts[0] == 0


def test_gloo_recording_steps_match_the_recorded_step_time(tmp_path: Path) -> None:
    folder = GLOO_NET / "gloo2_fast_r1"
    ranks = [RankFiles(r, folder / f"rank{r}.host_et.json.gz",
                       folder / f"rank{r}.kineto.json.gz") for r in (0, 1)]  # fmt: skip
    out = run_pipeline(ranks, tmp_path, plot=False, what_if=())
    steps = [step for rank in out.ranks for step in rank.views.steps]
    assert sorted({s.step for s in steps}) == [1, 2] and len(steps) == 4
    # gloo_net/README.md: 2 ranks, fast, r1: ProfilerStep# durations average 28.2 ms
    mean_ms = sum(s.measured_us or 0.0 for s in steps) / len(steps) / 1000
    assert round(mean_ms, 1) == 28.2
    for step in steps:
        assert step.error_pct is not None and abs(step.error_pct) < 1
        assert step.gpu_us == 0 and step.communication_us > 0  # a CPU-only gloo job
        check_kinds_fit(step)
