"""The job as a whole (:mod:`chakra.views.job`): where each rank's time went, in four parts
that add up to its makespan and agree with the temporal breakdown; the job's makespan and
spread; a what-if scenario's change of the job's makespan (its slowest rank's)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pytest

from chakra.simulate.scenarios import RankWhatIf, WhatIf
from chakra.simulate.sim_result import RankResult
from chakra.views import rank_views
from chakra.views.job import job_summary, rank_share, rank_shares, scenario_change
from tests.simulate.test_engine import node, simulate


def rank_result(rank: int, simulated: float, measured: Optional[float] = None) -> RankResult:
    return RankResult(rank, 1, simulated, measured, None, [])


def test_four_parts_add_up_and_agree_with_the_breakdown() -> None:
    # rank 0: cpu 1 (0-10) launches a kernel (stream 7, 10-50) and a collective (stream 8,
    # 10-70: exposed 50-70); cpu 4 (70-75) after both. Rank 1: one cpu op (CPU-only rank)
    engine = simulate([node(1, 10), node(2, 40, (1,), stream=7),
                       node(3, 60, (1,), stream=8, coll="ar"), node(4, 5, (2, 3))],
                      [node(1, 20)])  # fmt: skip
    gpu, cpu = rank_shares(engine)
    assert (gpu.compute_us, gpu.communication_us) == pytest.approx((40, 20))
    assert gpu.unexplained_us == 0 and gpu.idle_us == pytest.approx(15)  # the host's ops
    assert cpu.compute_us == pytest.approx(20) and cpu.idle_us == 0  # host ops compute
    breakdown = rank_views(engine)[0].breakdown
    assert gpu.compute_us == pytest.approx(breakdown.compute_us)
    assert gpu.communication_us == pytest.approx(breakdown.communication_us)
    assert gpu.unexplained_us + gpu.idle_us == pytest.approx(breakdown.idle_us)


def test_unexplained_is_the_time_of_delay_and_idle_nodes(gpu_job: Any) -> None:
    result = gpu_job
    for position, share in enumerate(rank_shares(result)):
        parts = (share.compute_us, share.communication_us, share.unexplained_us, share.idle_us)
        assert sum(parts) == pytest.approx(share.makespan_us)
        assert min(parts) >= 0
        graph = result.graphs[position]
        delay = np.array([name in ("[delay]", "[idle]") for name in graph.names])
        starts = np.frombuffer(result.start[position])
        ends = np.frombuffer(result.end[position])
        assert delay.any()  # the synthetic job has launch delays and idle gaps
        assert 0 < share.unexplained_us <= float((ends - starts)[delay].sum()) + 1e-6


@pytest.fixture(scope="module")
def gpu_job(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A replay of a small synthetic 2-rank GPU job (with its [delay]/[idle] nodes)."""
    from chakra.pipeline import RankFiles, run_pipeline
    from chakra.simulate.replay import SimOptions
    from chakra.simulate.run import simulate_files
    from chakra.synth import SynthOptions, generate_job

    folder = tmp_path_factory.mktemp("job")
    generate_job(SynthOptions(seed=2, ranks=2, steps=1, ops_per_step=40), folder / "traces")
    ranks = [RankFiles(r, folder / "traces" / f"rank{r}.host_et.json",
                       folder / "traces" / f"rank{r}.kineto.json") for r in (0, 1)]  # fmt: skip
    run_pipeline(ranks, folder / "out", plot=False, html=False, what_if=[])
    ets = [folder / "out" / f"workload.{r}.et" for r in (0, 1)]
    return simulate_files(ets, options=SimOptions(explain=True))


def test_a_rank_without_times_has_no_parts() -> None:
    engine = simulate([node(1, 10)])
    share = rank_share(engine, 0)
    assert share.makespan_us == pytest.approx(10) and share.compute_us == pytest.approx(10)


def test_the_job_is_its_slowest_rank() -> None:
    ranks = [rank_result(0, 100.0, 110.0), rank_result(1, 130.0, 120.0), rank_result(2, 90.0),
             rank_result(3, 130.0, 125.0)]  # fmt: skip
    job = job_summary(ranks, [], [])
    assert (job.simulated_makespan_us, job.slowest_rank) == (130.0, 1)  # ties: lower rank
    assert (job.measured_makespan_us, job.measured_slowest_rank) == (125.0, 3)
    assert (job.fastest_rank, job.median_rank) == (2, 0)  # sorted 90, 100, 130, 130
    assert job.spread_us == 40.0 and job.spread_ratio == pytest.approx(1.3)
    alone = job_summary([rank_result(5, 0.0)], [], [])
    assert alone.spread_ratio is None and alone.measured_makespan_us is None


def test_a_what_if_changes_the_job_by_its_slowest_rank() -> None:
    # the replay's slowest rank (1, 200 us) gains most; rank 0 becomes the slowest
    what_if = WhatIf("x", ["gpu=0.5"], [3], [RankWhatIf(0, 180.0, 190.0, None),
                                             RankWhatIf(1, 150.0, 200.0, None)])  # fmt: skip
    change = scenario_change(what_if)
    assert (change.makespan_us, change.slowest_rank) == (180.0, 0)
    assert change.change_pct == pytest.approx(-10.0)  # 200 -> 180, not rank 1's -25%
    skipped = scenario_change(WhatIf("y", ["gpu=0.5"], [0], [], note="skipped: no node"))
    assert skipped.change_pct is None and skipped.note == "skipped: no node"
