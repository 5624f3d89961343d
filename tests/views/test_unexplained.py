"""Unexplained time (``[idle]``/``[delay]`` nodes) is its own kind: never busy, never host ops,
never what makes a rank "CPU-bound"; and the slack beside the bound: what a kind at zero
duration would give at most. Hand-made graphs worked out by hand, a synthetic job whose
``[idle]`` time the test sums itself, and the real ``param/linear`` pair."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chakra.cli.sim import main as chakra_sim
from chakra.pipeline import RankFiles, run_pipeline
from chakra.simulate import SimOptions, SimResult, build_graph, rank_results, simulate
from chakra.simulate.run import simulate_files
from chakra.synth import SynthOptions, generate_job
from chakra.views import bound, free_makespans, rank_views, typed_critical_path
from chakra.views.busy import busy_series
from tests.simulate.test_engine import node

UNEXPLAINED_NAMES = ("[idle]", "[delay]")


def run(nodes: list) -> SimResult:
    return simulate([build_graph(nodes, 0)], SimOptions(explain=True))


def idle_between(before_us: int, idle_us: int, after_us: int) -> list:
    # thread 1: A, then an [idle] gap, then B, each waiting for the one before
    gap = node(2, idle_us, (1,))
    gap.name = "[idle]"
    return [node(1, before_us), gap, node(3, after_us, (2,))]


def test_idle_is_neither_busy_nor_host_ops() -> None:
    result = run(idle_between(10, 5, 10))
    (use,) = rank_results(result)[0].resources
    assert (use.busy_us, use.unexplained_us, use.utilisation) == (20, 5, 20 / 25)
    path = typed_critical_path(result)
    assert (path.cpu_us, path.unexplained_us, path.makespan_us) == (20, 5, 25)
    assert [s.kind for s in path.segments] == ["cpu", "unexplained", "cpu"]
    (band,) = busy_series(result).ranks[0].bands
    width = 25 / 200
    assert sum(band.simulated) * width == pytest.approx(20)
    assert band.simulated_unexplained is not None
    assert sum(band.simulated_unexplained) * width == pytest.approx(5)
    verdict = bound(path, free_makespans(result))
    assert (verdict.kind, verdict.share_pct) == ("cpu", 80.0)
    assert verdict.headline.startswith("CPU-bound (host ops): 80.0% of the makespan")


def test_when_unexplained_time_dominates_the_headline_says_so() -> None:
    result = run(idle_between(2, 20, 2))
    verdict = bound(typed_critical_path(result), free_makespans(result))
    assert (verdict.kind, verdict.share_pct) == ("unexplained", pytest.approx(100 * 20 / 24))
    assert verdict.headline.startswith("unexplained-bound")
    assert "no unexplained time would give at most -83.33%" in verdict.headline


def test_slack_says_how_little_a_bound_kind_can_give() -> None:
    # cpu 1 (0-10) launches kernel 2 (stream 7, 10-60); cpu 3 (10-55) runs beside it.
    # GPU-bound 50 of 60 us, but with the kernel free cpu 3 still ends at 55: -8.33%
    result = run([node(1, 10), node(2, 50, (1,), stream=7), node(3, 45, (1,))])
    (views,) = rank_views(result)
    assert views.bound is not None
    assert (views.bound.kind, views.bound.share_pct) == ("gpu", pytest.approx(100 * 50 / 60))
    slack = {s.kind: (s.on_path_us, s.free_makespan_us) for s in views.bound.slack}
    assert slack == {"cpu": (10, 50), "gpu": (50, 55)}
    assert views.bound.headline.endswith("GPU compute free would give at most -8.33%.")
    (views,) = rank_views(result, slack=False)
    assert views.bound is not None and views.bound.slack == []


def _by_thread(result: SimResult, rank: int) -> dict[str, tuple[float, float]]:
    """(real busy, unexplained) µs per thread label, summed here node by node."""
    graph = result.graphs[rank]
    out: dict[str, list[float]] = {}
    for i, slot in enumerate(graph.resource):
        if slot < 0 or not graph.resources[slot].is_thread:
            continue
        sums = out.setdefault(graph.resources[slot].label, [0.0, 0.0])
        sums[graph.names[i] in UNEXPLAINED_NAMES] += result.end[rank][i] - result.start[rank][i]
    return {label: (busy, idle) for label, (busy, idle) in out.items()}


def test_synthetic_rank_threads_leave_their_idle_time_out(tmp_path: Path, capsys: Any) -> None:
    traces = tmp_path / "traces"
    generate_job(SynthOptions(seed=2, ranks=2, ops_per_step=60), traces)
    ranks = [RankFiles(r, traces / f"rank{r}.host_et.json", traces / f"rank{r}.kineto.json")
             for r in range(2)]  # fmt: skip
    out = run_pipeline(ranks, tmp_path / "out", plot=False, what_if=())
    ets = [str(tmp_path / "out" / f"workload.{r}.et") for r in range(2)]
    replay = simulate_files(ets, options=SimOptions(explain=False))
    with pytest.raises(SystemExit):
        chakra_sim(ets)
    printed = capsys.readouterr().out
    line = re.compile(r"^  (thread \d+) +busy +([\d,]+) us +[\d.]+%(?:  unexplained +([\d,]+) us)?")
    idle_total = 0.0
    for r, report in enumerate(out.ranks):
        expected = _by_thread(replay, r)
        idle_total += sum(idle for _, idle in expected.values())
        for use in report.simulation.resources:
            if use.resource in expected:
                assert (use.busy_us, use.unexplained_us) == pytest.approx(expected[use.resource])
        section = printed.split(f"rank {r} (")[1].split("\nrank ")[0]
        shown = {m[1]: (m[2], m[3]) for m in map(line.match, section.splitlines()) if m}
        for label, (busy, idle) in expected.items():
            if not busy and not idle:  # never busy (the root's thread 0): no line
                assert label not in shown
                continue
            assert shown[label][0] == f"{busy:,.0f}"
            assert shown[label][1] == (f"{idle:,.0f}" if idle > 0 else None)
    assert idle_total > 0  # the synthetic job has [idle] gaps: the test tests something


def _covered(starts: np.ndarray, ends: np.ndarray) -> float:
    """Time covered by at least one interval, by a plain sweep."""
    total, reach = 0.0, -np.inf
    for begin, end in sorted(zip(starts.tolist(), ends.tolist())):
        if end > reach:
            total += end - max(begin, reach)
            reach = end
    return total


def test_param_linear_headline_leaves_unexplained_time_out(
    shared_traces: Path, tmp_path: Path
) -> None:
    param = shared_traces / "param"
    ranks = [RankFiles(0, param / "linear.host_et.json.gz", param / "linear.kineto.json.gz")]
    result = run_pipeline(ranks, tmp_path, plot=False, what_if=())
    (entry,) = json.loads(result.report.read_text())["ranks"]
    replay = simulate_files([str(tmp_path / "workload.0.et")], options=SimOptions())
    graph = replay.graphs[0]
    starts, ends = np.asarray(replay.start[0]), np.asarray(replay.end[0])
    makespan = float(ends.max() - starts.min())
    assert makespan == pytest.approx(entry["simulation"]["simulated_makespan_us"])
    # the real host ops: on a thread, not communication, not [idle]/[delay]
    host = np.array([
        slot >= 0 and graph.resources[slot].is_thread and name not in UNEXPLAINED_NAMES
        and i not in graph.comm
        for i, (slot, name) in enumerate(zip(graph.resource, graph.names))
    ])  # fmt: skip
    real_cpu_share = 100 * _covered(starts[host], ends[host]) / makespan
    verdict = entry["views"]["bound"]
    assert verdict["kind"] == "cpu" and verdict["share_pct"] <= real_cpu_share + 1e-6
    page = (tmp_path / "report.html").read_text()
    shown = re.search(r'class="verdict">CPU-bound \(host ops\): ([\d.]+)% of the makespan', page)
    assert shown is not None and float(shown[1]) <= real_cpu_share + 0.05
    # what the path spends on [idle]/[delay] is the run's unexplained time, not host ops
    path = entry["views"]["critical_path"]
    assert path["launch_us"] + path["unexplained_us"] == pytest.approx(
        entry["simulation"]["unexplained_us"])  # fmt: skip
    assert path["unexplained_us"] > 1000  # param/linear: thousands of µs are [idle]
    # thread busy excludes [idle]/[delay]; they are reported apart
    expected = _by_thread(replay, 0)
    for use in entry["simulation"]["resources"]:
        if use["resource"] in expected:
            busy, idle = expected[use["resource"]]
            assert (use["busy_us"], use["unexplained_us"]) == pytest.approx((busy, idle))
            assert use["utilisation"] == pytest.approx(busy / makespan)
    assert sum(idle for _, idle in expected.values()) > 1000
