"""The fold ASTRA-sim profile (issue 34): a rank's timeline as one chain of compute pieces
with its communications kept, so that ASTRA-sim's one CPU, GPU and network slot per rank
replays the measured step. Checked on hand-built graphs (times worked out by hand) and on
synthetic jobs through ``chakra_pipeline --astra-sim-profile fold``, replayed by the exact
model of ASTRA-sim (``--resources astra-sim``; the real one in the slow tests)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from chakra.cli import pipeline
from chakra.et import Node, NodeType, read_et, set_attr
from chakra.simulate import build_graph, simulate, what_if
from chakra.simulate.astra_network import AstraRing
from chakra.simulate.fold import COMM_TYPES, SEGMENT_NAME, fold_rank
from chakra.simulate.network import NetworkModel
from chakra.simulate.run import simulate_astra_files
from chakra.synth import SynthOptions, generate_job
from tests.conftest import REPO_ROOT, AstraSim, assert_astra_sim_ran_all


def _node(node_id: int, us: int, deps: tuple = (), stream: int = 7, coll: bool = False) -> Node:
    node = Node(id=node_id, name=f"n{node_id}", duration_micros=us, data_deps=list(deps),
                type=NodeType.COMM_COLL_NODE if coll else NodeType.COMP_NODE)  # fmt: skip
    set_attr(node, "is_cpu_op", False)
    set_attr(node, "stream", stream)
    set_attr(node, "device", 0)
    if coll:
        for key, value in (("comm_type", 0), ("comm_size", 1 << 20), ("pg_name", "0")):
            set_attr(node, key, value)
    return node


def test_a_rank_becomes_pieces_around_its_communication() -> None:
    # stream 7: kernel 1 (0-10), then kernel 4 waits for the collective 2 (10-40) and
    # runs 40-50; stream 9: kernel 3 (10-30) overlaps the collective
    nodes = [_node(1, 10), _node(2, 30, (1,), stream=8, coll=True), _node(3, 20, (1,), 9),
             _node(4, 10, (2,))]  # fmt: skip
    graph = build_graph(nodes)
    result = simulate([graph])
    folded = fold_rank(nodes, graph, result.start[0], result.end[0])
    pieces = [n for n in folded if n.name == SEGMENT_NAME]
    (comm,) = [n for n in folded if n.type == NodeType.COMM_COLL_NODE]
    # the critical path waited inside the collective from 10 to 40: no piece there
    assert [p.duration_micros for p in pieces] == [10, 10]
    assert list(comm.data_deps) == [pieces[0].id] and comm.name == "n2"
    assert {a.name for a in comm.attr} >= {"comm_type", "comm_size", "pg_name"}
    assert set(pieces[1].data_deps) == {pieces[0].id, comm.id}
    assert [n.id for n in folded] == list(range(1, len(folded) + 1))


def _fold_job(tmp_path: Path, **synth: object) -> tuple[Path, dict]:
    traces = tmp_path / "traces"
    generate_job(SynthOptions(**synth), traces)  # type: ignore[arg-type]
    out = tmp_path / "run"
    argv = ["--trace-dir", str(traces), "--output-dir", str(out), "--astra-sim-profile",
            "fold", "--no-timeline", "--no-plot", "--no-what-if", "--no-html",
            "--log-level", "ERROR"]  # fmt: skip
    with pytest.raises(SystemExit) as done:
        pipeline.main(argv)
    assert done.value.code in (0, None)
    return out, json.loads((out / "report.json").read_text())


def _measured(report: dict) -> list[float]:
    return [r["simulation"]["measured_makespan_us"] for r in report["ranks"]]


def _fitted(folder: Path) -> float:
    metadata, _ = read_et(folder / "workload_fold.0.et")
    return next(a.double_val for a in metadata.attr if a.name == "astra_sim_fitted_gbps")


SHAPES = {"8_ranks_workers": {"ranks": 8, "steps": 1, "worker_threads": True},
          "3_steps": {"ranks": 4, "steps": 3}}  # fmt: skip


@pytest.mark.parametrize("shape", list(SHAPES.values()), ids=list(SHAPES))
def test_astra_sims_model_replays_the_fold_at_the_measured_step(
    tmp_path: Path, shape: dict
) -> None:
    out, report = _fold_job(tmp_path, seed=3, ops_per_step=120, **shape)
    ranks = len(report["ranks"])
    folds = [out / f"workload_fold.{r}.et" for r in range(ranks)]
    full = [out / f"workload.{r}.et" for r in range(ranks)]
    gbps = _fitted(out)
    spans = simulate_astra_files(folds, AstraRing(gbps, 500.0, ranks)).makespans()
    for span, measured in zip(spans, _measured(report)):
        assert span == pytest.approx(measured, rel=0.05)
    # today's full graph in the same model: far from the step (what the fold fixes)
    assert max(simulate_astra_files(full, AstraRing(gbps, 500.0, ranks)).makespans()) > 1.3 * max(
        _measured(report)
    )
    metadata, _ = read_et(folds[0])
    assert {a.name: a.string_val for a in metadata.attr}.get("astra_sim_profile") == "fold"
    # half the bandwidth: each rank's change as chakra_sim --network predicts on the full
    # graph (from the fitted bandwidth to half of it), within 3 points
    slower = simulate_astra_files(folds, AstraRing(gbps / 2, 500.0, ranks)).makespans()
    graphs = [build_graph(read_et(path)[1], r) for r, path in enumerate(full)]
    replay = what_if(graphs, [], NetworkModel.parse(f"ring:{gbps}:0.5")).makespans()
    predicted = what_if(graphs, [], NetworkModel.parse(f"ring:{gbps / 2}:0.5")).makespans()
    for fold_base, fold_slow, base, slow in zip(spans, slower, replay, predicted):
        assert (fold_slow / fold_base - 1) * 100 == pytest.approx((slow / base - 1) * 100, abs=3)


@pytest.mark.slow
@pytest.mark.parametrize(
    "case", ["synthetic_8_ranks", "synthetic_3_steps", "gloo2_fast_r1", "gloo4_fast_r1"]
)
def test_the_real_astra_sim_finishes_the_fold_at_the_measured_step(
    tmp_path: Path, astra_sim: AstraSim, case: str
) -> None:
    if case == "synthetic_8_ranks":
        out, report = _fold_job(tmp_path, seed=3, ranks=8, steps=1, ops_per_step=300,
                                worker_threads=True)  # fmt: skip
    elif case == "synthetic_3_steps":
        out, report = _fold_job(tmp_path, seed=5, ranks=4, steps=3, ops_per_step=200)
    else:
        out = tmp_path / "run"
        traces = REPO_ROOT / "tests" / "data" / "pytorch213" / "gloo_net" / case
        argv = ["--trace-dir", str(traces), "--output-dir", str(out), "--astra-sim-profile",
                "fold", "--no-timeline", "--no-plot", "--no-what-if",
                "--log-level", "ERROR"]  # fmt: skip
        with pytest.raises(SystemExit):
            pipeline.main(argv)
        report = json.loads((out / "report.json").read_text())
    gbps = _fitted(out)
    verdict = astra_sim.run(out / "workload_fold", "--comm-groups",
                            str(out / "workload.comm_groups.json"), "--gbps", f"{gbps!r}",
                            "--latency-ns", "500")  # fmt: skip
    assert_astra_sim_ran_all(verdict)
    for rank, measured in zip(verdict["ranks"], _measured(report)):
        assert rank["finished_ns"] / 1000 == pytest.approx(measured, rel=0.05), rank


def test_the_pipeline_prints_the_fold_and_its_network(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fold_job(tmp_path, seed=4, ranks=2, steps=1, ops_per_step=40)
    said = capsys.readouterr().out
    assert "--workload-configuration=" in said and "workload_fold" in said
    assert re.search(r"run\.py --gbps [0-9.e+-]+ --latency-ns 500: finishes at", said), said


def test_the_converter_writes_the_fold_of_one_rank(tmp_path: Path) -> None:
    """``chakra_converter PyTorch --astra-sim-profile fold``: the fold of the rank as it
    replays alone; its pieces and the communications its critical path waited in span the
    replay, and the file says which profile it is."""
    from chakra.cli import converter

    fixture = REPO_ROOT / "tests/data/pytorch213/kineto_only/gloo_2rank"
    full, fold = tmp_path / "full.et", tmp_path / "fold.et"
    for target, profile in ((full, "full"), (fold, "fold")):
        argv = ["PyTorch", "--input", str(fixture / "rank0.kineto.json.gz"), "--output",
                str(target), "--astra-sim-profile", profile, "--log-level", "ERROR"]  # fmt: skip
        with pytest.raises(SystemExit) as done:
            converter.main(argv)
        assert done.value.code in (0, None)
    metadata, folded = read_et(fold)
    assert {a.name: a.string_val for a in metadata.attr}["astra_sim_profile"] == "fold"
    nodes = read_et(full)[1]
    comms = [n.name for n in nodes if n.type in COMM_TYPES]
    kept = [n.name for n in folded if n.name != SEGMENT_NAME]
    assert sorted(kept) == sorted(comms) and len(folded) < len(nodes) / 2
    assert all(n.type == NodeType.COMP_NODE for n in folded if n.name == SEGMENT_NAME)
