"""Hazards of real gloo jobs: each option changes what it says, and only that."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from chakra.synth import SynthOptions, SynthOptionsError, generate_job, options_with_vintages
from chakra.synth.invariants import validate_job
from tests.synth.conftest import load_json

BASE = {"seed": 8, "ranks": 2, "steps": 2, "ops_per_step": 60}
EVALUATE = "autograd::engine::evaluate_function: "


def _ns(us: float) -> int:
    return round(us * 1000)


def _end_ns(item: dict, ts: str = "ts", dur: str = "dur") -> int:
    return _ns(item[ts]) + _ns(item[dur])


def _cpu_events(kineto: dict) -> list[dict]:
    return [e for e in kineto["traceEvents"] if e.get("cat") in ("cpu_op", "user_annotation")]


def _thread_tids(kineto: dict) -> dict[str, int]:
    """Kineto thread label (``pt_main_thread`` ...) -> OS tid."""
    return {
        e["args"]["name"].split("(")[1].rstrip(")"): e["tid"]
        for e in kineto["traceEvents"]
        if e.get("name") == "thread_name" and "(pt_" in e["args"]["name"]
    }


def _attr(node: dict, name: str) -> object:
    return next(a["value"] for a in node["attrs"] if a["name"] == name)


def _host_nodes(path: Path) -> dict[int, dict]:
    return {n["id"]: n for n in load_json(path)["nodes"]}


def test_no_cuda_sync_drops_only_the_sync_records(tmp_path: Path) -> None:
    modern = generate_job(SynthOptions(**BASE), tmp_path / "modern")
    options = options_with_vintages(SynthOptions(**BASE), ["no_cuda_sync"])
    assert options.vintages() == ("no_cuda_sync",) and not options.cuda_sync_records
    old = generate_job(options, tmp_path / "old")
    for before, after in zip(modern.ranks, old.ranks):
        assert before.host_et.read_bytes() == after.host_et.read_bytes()
        events = load_json(before.kineto)["traceEvents"]
        syncs = [e for e in events if e.get("cat") == "cuda_sync"]
        kinds = {"Stream Wait Event", "Stream Sync", "Event Sync", "Context Sync"}
        assert {e["name"] for e in syncs} == kinds
        kept = [e for e in events if e.get("cat") != "cuda_sync"]
        assert load_json(after.kineto)["traceEvents"] == kept
        waits = [e for e in kept if e.get("name") == "cudaStreamWaitEvent"]
        assert waits and all(e["cat"] == "cuda_runtime" for e in waits)  # the calls stay
        truth_before, truth_after = load_json(before.truth), load_json(after.truth)
        assert truth_after["options"]["cuda_sync_records"] is False
        for key in ("host_ops", "runtime_calls", "gpu_ops", "edges"):
            assert truth_before[key] == truth_after[key]  # what ran is the same
        assert any(e["kind"] == "event_wait" for e in truth_after["edges"])
    assert validate_job(old.out_dir) == ()


def test_blocking_gloo_waits_are_self_time_of_the_enclosing_op(tmp_path: Path) -> None:
    summary = generate_job(SynthOptions(**BASE, blocking_gloo=True), tmp_path)
    ends: dict[int, list[int]] = {}
    for rank in summary.ranks:
        truth, kineto = load_json(rank.truth), load_json(rank.kineto)
        tids = _thread_tids(kineto)
        assert set(tids) == {"pt_main_thread", "pt_autograd_0", "pt_gloo_runloop"}
        by_external = {e["args"]["External id"]: e for e in _cpu_events(kineto)}
        by_host = {op["host_id"]: op for op in truth["host_ops"]}
        nodes = _host_nodes(rank.host_et)
        assert not any(n["name"] == "c10d::wait" for n in nodes.values())
        waits = truth["host_waits"]
        assert [w["step"] for w in waits] == [0, 0, 1, 1]
        for index, wait in enumerate(waits):
            parent = by_external[wait["parent_external_id"]]
            gloo = by_external[wait["waited_for_external_id"]]
            expected = f"ProfilerStep#{wait['step']}" if index % 2 == 0 else "## log_metrics ##"
            assert parent["name"] == expected and parent["tid"] == wait["tid"]
            assert gloo["name"] == ("gloo:broadcast" if index % 2 == 0 else "gloo:all_reduce")
            assert gloo["tid"] == tids["pt_gloo_runloop"] != wait["tid"] == tids["pt_main_thread"]
            start, end = _ns(wait["ts_us"]), _ns(wait["ts_us"]) + _ns(wait["dur_us"])
            assert _end_ns(gloo) + 1_000 <= end <= _end_ns(gloo) + 3_000  # the wake-up
            # no op of the main thread in the wait: it is the enclosing op's self time
            inside = [e for e in _cpu_events(kineto) if e["tid"] == wait["tid"]
                      and _ns(e["ts"]) < end and start < _end_ns(e)]  # fmt: skip
            assert all(_ns(e["ts"]) <= _ns(parent["ts"]) for e in inside)
            assert all(_end_ns(parent) <= _end_ns(e) for e in inside)
            # the c10d:: op returned at once, just before the wait, into the same parent
            c10d = max((e for e in _cpu_events(kineto) if e["tid"] == wait["tid"]
                        and e["name"].startswith("c10d::") and _end_ns(e) <= start),
                       key=_end_ns)  # fmt: skip
            assert start - _end_ns(c10d) < 1_000 and _ns(c10d["dur"]) < 10_000
            gloo_node = nodes[wait["waited_for_host_id"]]
            assert gloo_node["ctrl_deps"] == wait["parent_host_id"]
            assert _attr(gloo_node, "tid") == 1  # filed on the main thread
            assert by_host[wait["waited_for_host_id"]]["tid"] == gloo["tid"]
            ends.setdefault(index, []).append(_end_ns(gloo))
    assert all(len(set(values)) == 1 for values in ends.values())  # the ranks meet
    assert validate_job(summary.out_dir) == ()


def test_blocking_gloo_keeps_the_async_collective_of_worker_threads(tmp_path: Path) -> None:
    options = SynthOptions(**BASE, worker_threads=True, blocking_gloo=True)
    summary = generate_job(options, tmp_path)
    for rank in summary.ranks:
        names = [n["name"] for n in _host_nodes(rank.host_et).values()]
        assert names.count("c10d::wait") == 2  # the async one, waited on later
        assert names.count("gloo:all_reduce") == 4 and names.count("gloo:broadcast") == 2
        assert len(load_json(rank.truth)["host_waits"]) == 4
    assert validate_job(summary.out_dir) == ()


@pytest.mark.parametrize("extra", [{"worker_threads": True}, {"blocking_gloo": True}])
def test_unrecorded_gloo_worker_has_no_thread_root(tmp_path: Path, extra: dict) -> None:
    options = SynthOptions(**BASE, **extra, unrecorded_gloo_ranks=(0,))
    summary = generate_job(options, tmp_path)
    for rank in summary.ranks:
        nodes = _host_nodes(rank.host_et)
        roots = sorted(_attr(n, "tid") for n in nodes.values() if n["name"].endswith("thread]"))
        unrecorded = rank.rank == 0
        assert (4 in roots) is not unrecorded  # host ET thread 4: the gloo worker
        gloo = [n for n in nodes.values() if n["name"].startswith("gloo:")]
        assert len(gloo) == (4 if "blocking_gloo" in extra else 2)  # per step: 2 or 1
        for node in gloo:  # the main thread's tid attr and a main-thread parent
            parent = nodes[node["ctrl_deps"]]
            assert _attr(node, "tid") == _attr(parent, "tid") == 1
            assert parent["name"].startswith(("c10d::", "ProfilerStep#", "## log_metrics"))
        assert any(n["name"] == "aten::view" for n in nodes.values()) is not unrecorded
        kineto = load_json(rank.kineto)
        tids = _thread_tids(kineto)
        on_worker = {e["name"] for e in _cpu_events(kineto) if e["tid"] == tids["pt_gloo_runloop"]}
        assert on_worker == {n["name"] for n in gloo} | (set() if unrecorded else {"aten::view"})
    assert load_json(summary.job_truth)["options"]["unrecorded_gloo_ranks"] == [0]
    assert validate_job(summary.out_dir) == ()


def test_stale_host_parents_point_to_an_ended_autograd_op(tmp_path: Path) -> None:
    summary = generate_job(SynthOptions(**BASE, stale_host_parents=True), tmp_path)
    for rank in summary.ranks:
        truth, kineto = load_json(rank.truth), load_json(rank.kineto)
        tids = _thread_tids(kineto)
        nodes = _host_nodes(rank.host_et)
        by_rf = {e["args"]["Record function id"]: e for e in _cpu_events(kineto)}
        rf_ids = [_attr(n, "rf_id") for n in nodes.values() if _attr(n, "rf_id")]
        assert len(rf_ids) == len(set(rf_ids))
        stale = [op for op in truth["host_ops"] if "stale_host_parent_id" in op]
        assert [op["name"] for op in stale] == [
            "torch.distributed.ddp.reducer::copy_bucket_to_grad",
            "torch.distributed.ddp.reducer::copy_bucket_to_grad",
            "Optimizer.step#AdamW.step",
        ] * 2
        for op in stale:
            node = nodes[op["host_id"]]
            event = by_rf[_attr(node, "rf_id")]
            assert event["name"] == node["name"] == op["name"]  # rf_id and names agree
            assert event["tid"] == tids["pt_main_thread"] and _attr(node, "tid") == 1
            assert node["ctrl_deps"] == op["stale_host_parent_id"] != op["parent_host_id"]
            assert nodes[op["parent_host_id"]]["name"].startswith("ProfilerStep#")
            parent_node = nodes[node["ctrl_deps"]]
            parent_event = by_rf[_attr(parent_node, "rf_id")]
            assert parent_node["name"].startswith(EVALUATE) and _attr(parent_node, "tid") == 2
            assert parent_event["tid"] == tids["pt_autograd_0"]
            assert _end_ns(parent_event) < _ns(event["ts"])  # it had ended
        copies = [e for e in _cpu_events(kineto) if e["name"] == "aten::copy_"
                  and e["tid"] == tids["pt_main_thread"]]  # fmt: skip
        assert len(copies) >= 4  # two buckets per step, each a device-to-device copy
    assert validate_job(summary.out_dir) == ()


def test_new_options_are_off_by_default_and_describe_only_when_on() -> None:
    described = SynthOptions().describe()
    for name in ("cuda_sync_records", "blocking_gloo", "unrecorded_gloo_ranks",
                 "stale_host_parents"):  # fmt: skip
        assert name not in described
    on = SynthOptions(ranks=3, blocking_gloo=True, unrecorded_gloo_ranks=[2, 0, 2],
                      stale_host_parents=True, cuda_sync_records=False)  # fmt: skip
    assert on.unrecorded_gloo_ranks == (0, 2)
    described = on.describe()
    assert described["unrecorded_gloo_ranks"] == [0, 2] and described["blocking_gloo"]
    assert described["vintages"] == ["no_cuda_sync"] and described["stale_host_parents"]
    assert dataclasses.replace(on, ranks=3) == on


@pytest.mark.parametrize(
    ("changes", "message"),
    [({"unrecorded_gloo_ranks": (0,)}, "needs a gloo worker"),
     ({"unrecorded_gloo_ranks": (2,), "worker_threads": True}, "ranks from 0 to 1, not 2"),
     ({"unrecorded_gloo_ranks": (True,), "worker_threads": True}, "not True"),
     ({"unrecorded_gloo_ranks": 5, "worker_threads": True}, "ranks from 0 to 1, not 5")],
)  # fmt: skip
def test_bad_unrecorded_ranks_raise_one_line(changes: dict, message: str) -> None:
    with pytest.raises(SynthOptionsError, match=message) as caught:
        SynthOptions(ranks=2, **changes)
    assert "\n" not in str(caught.value)
