"""The views on hand-made graphs whose every number is worked out by hand, and on a
synthetic job whose breakdowns must add up to each rank's makespan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chakra.et import Node
from chakra.pipeline import RankFiles, run_pipeline
from chakra.simulate import SimOptions, SimResult, build_graph, simulate
from chakra.synth import SynthOptions, generate_job
from chakra.views import (
    kernel_breakdown,
    measured_schedule,
    overlap,
    rank_views,
    simulated_schedule,
    temporal_breakdown,
    typed_critical_path,
)
from chakra.views.idle import meeting_begins, stream_idle
from tests.simulate.test_engine import node


def run(*ranks: list) -> SimResult:
    graphs = [build_graph(nodes, rank) for rank, nodes in enumerate(ranks)]
    return simulate(graphs, SimOptions(explain=False))


def launch_and_collective() -> list:
    # cpu 1 (0-10) launches gemm 2 (stream 7, 10-60) and a collective 3 (stream 8, 10-30);
    # cpu 4 (60-65) waits for the gemm
    return [node(1, 10), node(2, 50, (1,), stream=7), node(3, 20, (1,), stream=8, coll="0"),
            node(4, 5, (2,))]  # fmt: skip


def delay(node_id: int, duration: int, deps: tuple) -> Any:
    out: Node = node(node_id, duration, deps, tid=None)  # no tid: holds no resource
    out.name = "[delay]"
    return out


def streams_and_delay(delay_us: int = 15) -> list:
    # cpu 1 (0-10); kernel 2 (stream 7, 10-40); kernel 3 (stream 8) waits for kernel 2
    # (40-60); kernel 6 (stream 9) is launched by cpu 1 and started a delay later
    return [node(1, 10), node(2, 30, (1,), stream=7), node(3, 20, (1, 2), stream=8),
            delay(5, delay_us, (1,)), node(6, 10, (5,), stream=9)]  # fmt: skip


def test_breakdown_and_overlap_of_a_hidden_collective() -> None:
    schedule = simulated_schedule(run(launch_and_collective()), 0)
    breakdown = temporal_breakdown(schedule)
    # compute 10-60; the collective (10-30) under it; nothing on a GPU 0-10 and 60-65
    assert (breakdown.makespan_us, breakdown.compute_us, breakdown.communication_us,
            breakdown.idle_us) == (65, 50, 0, 15)  # fmt: skip
    assert breakdown.idle_pct == pytest.approx(100 * 15 / 65)
    hidden = overlap(schedule)
    assert (hidden.communication_us, hidden.overlapped_us, hidden.fraction) == (20, 20, 1.0)


def test_breakdown_of_an_exposed_collective() -> None:
    nodes = launch_and_collective()
    nodes[1] = node(2, 50, (1, 3), stream=7)  # the gemm now waits for the collective
    schedule = simulated_schedule(run(nodes), 0)
    breakdown = temporal_breakdown(schedule)  # collective 10-30, gemm 30-80, cpu 80-85
    assert (breakdown.compute_us, breakdown.communication_us, breakdown.idle_us) == (50, 20, 15)
    assert overlap(schedule).fraction == 0.0


def test_measured_schedule_views() -> None:
    nodes = launch_and_collective()
    for item, start in zip(nodes, (100, 120, 110, 170)):  # the gemm measured 10 us late
        item.start_time_micros = start
    graph = build_graph(nodes)
    measured = measured_schedule(graph)
    assert measured is not None
    breakdown = temporal_breakdown(measured)  # compute 120-170, collective 110-130, end 175
    assert (breakdown.makespan_us, breakdown.compute_us, breakdown.communication_us,
            breakdown.idle_us) == (75, 50, 10, 15)  # fmt: skip
    assert overlap(measured).fraction == 0.5
    assert measured_schedule(build_graph(launch_and_collective())) is None


def test_stream_idle_causes() -> None:
    engine = run(streams_and_delay())
    idle = {s.stream: s for s in stream_idle(engine, 0, meeting_begins(engine))}
    # makespan 60. stream 7: waits 10 for cpu 1, runs 30, then nothing for 20
    seven = idle["device 0 stream 7"]
    assert (seven.busy_us, seven.cpu_launch_us, seven.tail_us, seven.idle_us) == (30, 10, 20, 30)
    # stream 8: kernel 3's binding dependency is kernel 2 on stream 7 (ended at 40)
    eight = idle["device 0 stream 8"]
    assert (eight.busy_us, eight.other_stream_us, eight.cpu_launch_us) == (20, 40, 0)
    # stream 9: 0-10 waiting for cpu 1, 10-25 the launch delay, 35-60 nothing left
    nine = idle["device 0 stream 9"]
    assert (nine.cpu_launch_us, nine.launch_delay_us, nine.tail_us, nine.busy_us) == (
        10, 15, 25, 10)  # fmt: skip
    for stream in idle.values():
        assert stream.busy_us + stream.idle_us == 60
        assert stream.unattributed_us == stream.peer_rank_us == 0


def _delay_after(gpu_last: bool) -> list:
    """cpu 1 (measured 0-10) launches kernel 2 (stream 7, 10-40); cpu 4 (from 10) launches
    kernel 3 (stream 8), which also waits for kernel 2 (an inferred cross-stream edge) and
    started 15 after the later of them: after kernel 2 (``gpu_last``: cpu 4 runs 10-20),
    or after its launch (cpu 4 runs 10-50)."""
    cpu = 10 if gpu_last else 40
    nodes = [node(1, 10), node(2, 30, (1,), stream=7), node(4, cpu, (1,)),
             delay(5, 15, (4, 2)), node(3, 20, (5,), stream=8)]  # fmt: skip
    waited = max(10 + cpu, 40)
    for item, start in zip(nodes, (0, 10, 10, waited, waited + 15)):
        item.start_time_micros = start
    return nodes


@pytest.mark.parametrize("gpu_last", [True, False], ids=["after-gpu", "after-launch"])
def test_a_delay_after_gpu_work_is_unexplained_not_launch_latency(gpu_last: bool) -> None:
    """A ``[delay]`` before a kernel is launch latency only when what it followed is the
    launch; after another stream's kernel (an event wait or an inferred edge: the wake-up
    of a wait) the trace does not explain it. Typed critical path and stream idle agree."""
    engine = run(_delay_after(gpu_last))
    path = typed_critical_path(engine, 0)
    eight = {s.stream: s for s in stream_idle(engine, 0, meeting_begins(engine))}[
        "device 0 stream 8"]  # fmt: skip
    if gpu_last:  # cpu 1 0-10, kernel 2 10-40, delay 40-55, kernel 3 55-75
        assert (path.unexplained_us, path.launch_us, path.gpu_us) == (15, 0, 50)
        assert (eight.unexplained_us, eight.launch_delay_us, eight.other_stream_us) == (15, 0, 40)
    else:  # cpu 1 0-10, cpu 4 10-50, delay 50-65, kernel 3 65-85
        assert (path.unexplained_us, path.launch_us, path.cpu_us) == (0, 15, 50)
        assert (eight.unexplained_us, eight.launch_delay_us, eight.cpu_launch_us) == (0, 15, 50)


def test_peer_rank_wait_inside_a_collective() -> None:
    # rank 0 arrives at 10, rank 1 at 40: both end at 40 + 20
    engine = run([node(1, 10), node(2, 20, (1,), stream=8, coll="g")],
                 [node(1, 40), node(2, 20, (1,), stream=8, coll="g")])  # fmt: skip
    begins = meeting_begins(engine)
    (early,) = stream_idle(engine, 0, begins)
    assert (early.cpu_launch_us, early.peer_rank_us, early.busy_us, early.idle_us) == (
        10, 30, 20, 40)  # fmt: skip
    (late,) = stream_idle(engine, 1, begins)
    assert (late.cpu_launch_us, late.peer_rank_us, late.busy_us) == (40, 0, 20)
    breakdown = temporal_breakdown(simulated_schedule(engine, 0))
    assert (breakdown.compute_us, breakdown.communication_us, breakdown.idle_us) == (0, 50, 10)
    path = typed_critical_path(engine, 0)
    assert (path.cpu_us, path.communication_us, path.makespan_us) == (10, 50, 60)


def test_typed_critical_path() -> None:
    path = typed_critical_path(run(launch_and_collective()))
    assert (path.cpu_us, path.gpu_us, path.communication_us, path.launch_us) == (15, 50, 0, 0)
    assert [(s.kind, s.start_us, s.end_us, s.name) for s in path.segments] == [
        ("cpu", 0, 10, "n1"), ("gpu", 10, 60, "n2"), ("cpu", 60, 65, "n4")]  # fmt: skip
    # a long enough launch delay puts kernel 6 (stream 9) on the path: launch-bound
    path = typed_critical_path(run(streams_and_delay(delay_us=60)))
    assert (path.cpu_us, path.launch_us, path.gpu_us, path.makespan_us) == (10, 60, 10, 80)
    assert [s.kind for s in path.segments] == ["cpu", "launch", "gpu"]


def test_a_delay_before_a_host_op_is_unexplained() -> None:
    path = typed_critical_path(run([node(1, 10), delay(2, 7, (1,)), node(3, 5, (2,))]))
    assert (path.cpu_us, path.unexplained_us, path.launch_us, path.makespan_us) == (15, 7, 0, 22)
    assert [(s.kind, s.nodes) for s in path.segments] == [
        ("cpu", 1), ("unexplained", 1), ("cpu", 1)]  # fmt: skip


def test_kernel_breakdown() -> None:
    engine = run(streams_and_delay())
    kernels = kernel_breakdown(simulated_schedule(engine, 0), engine.graphs[0], top=2)
    assert [(k.name, k.count, k.total_us, k.mean_us) for k in kernels] == [
        ("n2", 1, 30, 30), ("n3", 1, 20, 20)]  # fmt: skip
    assert kernels[0].share == 0.5 and not kernels[0].communication
    engine = run(launch_and_collective())
    kernels = kernel_breakdown(simulated_schedule(engine, 0), engine.graphs[0])
    assert [(k.name, k.communication) for k in kernels] == [("n2", False), ("n3", True)]


def test_rank_views_gather_everything() -> None:
    (views,) = rank_views(run(streams_and_delay(delay_us=60)), top=1)
    assert views.critical_path_segments == 3
    assert [s.kind for s in views.critical_path.segments] == ["launch"]  # the longest
    assert views.critical_path.launch_us == 60  # the totals stay whole
    assert views.measured_breakdown is None and len(views.stream_idle) == 3


def test_synthetic_job_breakdowns_add_up(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    generate_job(SynthOptions(seed=1, ranks=2, ops_per_step=60), traces)
    ranks = [RankFiles(r, traces / f"rank{r}.host_et.json", traces / f"rank{r}.kineto.json")
             for r in range(2)]  # fmt: skip
    result = run_pipeline(ranks, tmp_path / "out", plot=False)
    for entry in json.loads(result.report.read_text())["ranks"]:
        makespan = entry["simulation"]["simulated_makespan_us"]
        views = entry["views"]
        breakdown = views["breakdown"]
        assert breakdown["makespan_us"] == pytest.approx(makespan)
        parts = breakdown["compute_us"] + breakdown["communication_us"] + breakdown["idle_us"]
        assert parts == pytest.approx(makespan)
        assert breakdown["compute_us"] > 0 and breakdown["communication_us"] > 0
        assert views["measured_breakdown"]["makespan_us"] == pytest.approx(
            entry["simulation"]["measured_makespan_us"])  # fmt: skip
        assert 0 <= views["overlap"]["fraction"] <= 1
        path = views["critical_path"]
        totals = sum(path[k] for k in ("cpu_us", "gpu_us", "communication_us", "launch_us",
                                       "unexplained_us", "unattributed_us"))  # fmt: skip
        assert totals == pytest.approx(makespan)
        assert views["stream_idle"]
        for stream in views["stream_idle"]:
            assert stream["busy_us"] + stream["idle_us"] == pytest.approx(makespan)
        assert views["kernels"] and views["kernels"][0]["total_us"] > 0
