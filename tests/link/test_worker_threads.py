"""Linking synthetic traces with a data-loader thread and a gloo-like worker thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chakra.ingest import load_device_trace, load_host_trace
from chakra.link import LinkedTrace, LinkOptions, link_traces
from chakra.synth import SynthOptions, generate_job
from tests.link.test_synthetic_truth import refs
from tests.synth.conftest import load_json


def linked_ranks(tmp_path: Path, **options: Any) -> list[tuple[dict, LinkedTrace]]:
    job = SynthOptions(seed=4, ranks=2, steps=2, ops_per_step=70, worker_threads=True, **options)
    summary = generate_job(job, tmp_path)
    return [
        (load_json(rank.truth),
         link_traces(load_host_trace(rank.host_et), load_device_trace(rank.kineto), LinkOptions()))
        for rank in summary.ranks
    ]  # fmt: skip


@pytest.mark.parametrize("host_step", [None, 1])
def test_worker_threads_link_without_loss(tmp_path: Path, host_step: Any) -> None:
    for truth, linked in linked_ranks(tmp_path, host_step=host_step):
        report = linked.report
        recorded = [op for op in truth["host_ops"] if op["host_id"] is not None]
        assert report.unmatched_host_ops == 0
        assert sum(report.matched.values()) == len(linked.matches) == len(recorded)
        assert report.rejected == {} and report.contradictions == {}
        # one gloo op per covered step, placed on the worker thread (host ET tid 4)
        gloo = [op for op in recorded if op["name"] == "gloo:all_reduce"]
        assert len(gloo) == (2 if host_step is None else 1)
        worker_root = next(n.id for n in linked.host.ops if n.is_thread_root and n.tid == 4)
        for op in gloo:
            assert linked.ran_under[op["host_id"]] == (worker_root, 4)
        assert report.host_ops_on_other_threads == len(gloo)


def true_and_linked_edges(truth: dict, linked: LinkedTrace) -> tuple[set, set]:
    """The truth's edges (those between ops the link can know) and the linker's."""
    present = {f"gpu:{n.event.correlation}" for n in linked.gpu_nodes}
    true_edges = {
        (e["kind"], e["src"], e["dst"]) for e in truth["edges"]
        if all(not r.startswith("gpu:") or r in present for r in (e["src"], e["dst"]))
    }  # fmt: skip
    return true_edges, refs(linked)


def test_worker_threads_edges_match_the_truth(tmp_path: Path) -> None:
    """Every truth edge, including the new inter-thread ones per step (main -> loader from
    step 1 on, loader -> zero_grad, c10d::allreduce_ -> gloo, gloo -> c10d::wait), is
    found, and nothing else (at default speeds the main thread does block in c10d::wait)."""
    for truth, linked in linked_ranks(tmp_path):
        names = {f"host:{op['host_id']}": op["name"] for op in truth["host_ops"]}
        inter = {(names[e["src"]], names[e["dst"]]) for e in truth["edges"]
                 if e["kind"] == "inter_thread"}  # fmt: skip
        assert ("gloo:all_reduce", "c10d::wait") in inter
        assert (
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            "Optimizer.zero_grad#AdamW.zero_grad",
        ) in inter
        assert ("c10d::allreduce_", "gloo:all_reduce") in inter
        true_edges, ours = true_and_linked_edges(truth, linked)
        assert true_edges - ours == set(), "missing edges"
        assert ours - true_edges == set(), "false edges"


def test_a_wait_that_did_not_block_leaves_no_evidence(tmp_path: Path) -> None:
    """With a slow CPU the gloo op ends before the main thread's op before c10d::wait
    (Optimizer.step) ends: the wait does not block, so no timing shows the dependency and
    the linker (inter-thread evidence = what ended last in the thread's idle time) misses
    exactly those gloo -> c10d::wait edges; everything else still matches."""
    missed = 0
    for truth, linked in linked_ranks(tmp_path, cpu_factor=3.0):
        ops = {f"host:{op['host_id']}": op for op in truth["host_ops"]}
        true_edges, ours = true_and_linked_edges(truth, linked)
        assert ours - true_edges == set()
        for _kind, src, dst in true_edges - ours:
            gloo, wait = ops[src], ops[dst]
            assert (gloo["name"], wait["name"]) == ("gloo:all_reduce", "c10d::wait")
            main_before = [
                op for op in truth["host_ops"]
                if op["tid"] == wait["tid"] and op["parent_host_id"] == wait["parent_host_id"]
                and op["ts_us"] + op["dur_us"] <= wait["ts_us"]
            ]  # fmt: skip
            last = max(main_before, key=lambda op: op["ts_us"] + op["dur_us"])
            assert last["name"] == "Optimizer.step#AdamW.step"
            assert last["ts_us"] + last["dur_us"] > gloo["ts_us"] + gloo["dur_us"]
            missed += 1
    assert missed > 0


@pytest.mark.xfail(
    strict=True,
    reason="linker gap: without Record function ids (no_rf_id, legacy 1.0.1) program-order "
    "matching aligns names per thread, and gloo:all_reduce is on the main thread in the host "
    "ET but on the worker's tid in Kineto, so it stays unmatched",
)
@pytest.mark.parametrize("vintage", ["rf_id_in_kineto", "legacy_host_et"])
def test_worker_threads_link_without_record_function_ids(tmp_path: Path, vintage: str) -> None:
    flag = {"rf_id_in_kineto": False} if vintage == "rf_id_in_kineto" else {vintage: True}
    for truth, linked in linked_ranks(tmp_path, **flag):
        assert linked.report.unmatched_host_ops == 0
        true_edges, ours = true_and_linked_edges(truth, linked)
        assert true_edges == ours
