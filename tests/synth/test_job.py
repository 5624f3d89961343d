"""generate_job end to end: every invariant, over seeds, sizes and vintages (hypothesis)."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chakra.fileio.compressed import read_input
from chakra.ingest import load_device_trace, load_host_trace
from chakra.synth import SynthOptions, generate_job
from chakra.synth.invariants import validate_job
from tests.synth.conftest import load_json

options_strategy = (
    st.builds(
        SynthOptions,
        seed=st.integers(0, 2**32),
        ranks=st.integers(1, 5),
        steps=st.integers(1, 3),
        ops_per_step=st.integers(1, 120),
        rf_id_in_kineto=st.booleans(),
        flows=st.booleans(),
        legacy_host_et=st.booleans(),
        integer_timestamps=st.booleans(),
        gzip=st.booleans(),
        worker_threads=st.booleans(),
        cuda_sync_records=st.booleans(),
        blocking_gloo=st.booleans(),
        stale_host_parents=st.booleans(),
    )
    .flatmap(
        lambda o: st.sets(st.integers(0, o.ranks - 1)).map(
            lambda r: dataclasses.replace(
                o, unrecorded_gloo_ranks=tuple(r) if o.gloo_worker else ()
            )
        )
    )
    .flatmap(
        lambda o: st.sampled_from([None, *range(o.steps)]).map(
            lambda k: dataclasses.replace(o, host_step=k)
        )
    )
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(options=options_strategy)
@pytest.mark.slow
def test_every_invariant_holds(options: SynthOptions) -> None:
    with tempfile.TemporaryDirectory() as folder:
        summary = generate_job(options, folder)
        assert validate_job(folder) == ()
        assert len(summary.ranks) == options.ranks
        assert all(rank.gpu_ops > 0 and rank.edges > 0 for rank in summary.ranks)


def test_same_options_give_identical_bytes(tmp_path: Path) -> None:
    options = SynthOptions(seed=11, ranks=3, steps=2, ops_per_step=80, gzip=True)
    first, second = generate_job(options, tmp_path / "a"), generate_job(options, tmp_path / "b")
    names = sorted(p.name for p in first.out_dir.iterdir())
    assert names == sorted(p.name for p in second.out_dir.iterdir())
    assert len(names) == 3 * 3 + 1
    for name in names:
        assert (first.out_dir / name).read_bytes() == (second.out_dir / name).read_bytes()
    other = generate_job(SynthOptions(seed=12, ranks=3, steps=2, ops_per_step=80), tmp_path / "c")
    assert read_input(other.ranks[0].kineto) != read_input(first.ranks[0].kineto)


def test_outputs_load_with_json_msgspec_and_the_ingest_loaders(tmp_path: Path) -> None:
    summary = generate_job(SynthOptions(seed=2, ranks=2, ops_per_step=60), tmp_path)
    for rank in summary.ranks:
        for path in (rank.host_et, rank.kineto, rank.truth):
            assert json.loads(path.read_text()) == msgspec.json.decode(path.read_bytes())
        assert len(load_host_trace(rank.host_et).ops) > rank.host_ops // 2
        assert load_device_trace(rank.kineto) is not None
    assert load_json(summary.job_truth)["format"] == "chakra-synth-job/1"


def _kineto_events(path: Path, cat: str) -> list[dict]:
    return [e for e in load_json(path)["traceEvents"] if e.get("cat") == cat]


def test_modern_trace_has_the_pytorch_2_vocabulary(tmp_path: Path) -> None:
    summary = generate_job(SynthOptions(seed=5, ranks=2, ops_per_step=60), tmp_path)
    kineto = load_json(summary.ranks[0].kineto)
    assert kineto["distributedInfo"]["world_size"] == 2
    assert {"deviceProperties", "baseTimeNanoseconds", "traceName"} <= set(kineto)
    names = {e["name"] for e in kineto["traceEvents"]}
    for name in (
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cuLaunchKernel",
        "cudaMemcpy",
        "cudaMemsetAsync",
        "cudaStreamWaitEvent",
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "ProfilerStep#0",
        "nccl:all_reduce",
        "record_param_comms",
        "Stream Wait Event",
        "Context Sync",
    ):
        assert name in names, name  # fmt: skip
    assert any(n.startswith("ncclDevKernel_AllReduce_Sum_f32_RING_LL(") for n in names)
    streams = {e["tid"] for e in kineto["traceEvents"] if e.get("cat") == "kernel"}
    assert streams == {7, 20, 24}
    host = load_json(summary.ranks[0].host_et)
    assert host["schema"] == "1.1.1-chakra.0.0.4"
    init = [n for n in host["nodes"] if n["name"] == "## process_group:init ##"]
    table = json.loads(init[0]["inputs"]["values"][0])
    assert [g["pg_name"] for g in table] == ["0", "1"]
    # as PyTorch writes it: the default group lists no ranks (all of them)
    assert [(g["ranks"], g["group_size"], g["group_count"]) for g in table] == [
        ([], 2, 2), ([0, 1], 2, 2)]  # fmt: skip


def test_autograd_thread_and_inter_thread_edges(tmp_path: Path) -> None:
    summary = generate_job(SynthOptions(seed=4, ranks=1, steps=2, ops_per_step=40), tmp_path)
    truth = load_json(summary.ranks[0].truth)
    tids = {op["tid"] for op in truth["host_ops"]}
    assert len(tids) == 2
    edges = [e for e in truth["edges"] if e["kind"] == "inter_thread"]
    assert len(edges) == 4  # forward -> backward and back, per step
    by_id = {op["host_id"]: op for op in truth["host_ops"]}
    first = by_id[int(edges[0]["dst"].split(":")[1])]
    assert first["name"].startswith("autograd::engine::evaluate_function: ")


@pytest.mark.parametrize("host_step", [0, 2])
def test_legacy_host_et_covers_one_step_with_unrelated_rf_ids(
    tmp_path: Path, host_step: int
) -> None:
    options = SynthOptions(seed=9, steps=3, ops_per_step=40, legacy_host_et=True,
                           host_step=host_step)  # fmt: skip
    summary = generate_job(options, tmp_path)
    host = load_json(summary.ranks[0].host_et)
    assert host["schema"] == "1.0.1"
    assert host["nodes"][0]["name"] == "[pytorch|profiler|execution_graph|thread]"
    assert {"rf_id", "parent", "input_shapes", "output_types"} <= set(host["nodes"][0])
    cpu_ops = _kineto_events(summary.ranks[0].kineto, "cpu_op")
    assert all("Record function id" not in e["args"] for e in cpu_ops)
    truth = load_json(summary.ranks[0].truth)
    covered = [op for op in truth["host_ops"] if op["host_id"] is not None]
    assert {op["step"] for op in covered} == {host_step}
    assert all(op["rf_id"] != op["external_id"] for op in covered)
    # Only names and order join the two traces: host-ET id order is Kineto start order.
    by_id = [op["name"] for op in sorted(covered, key=lambda op: op["host_id"])]
    assert by_id == [op["name"] for op in sorted(covered, key=lambda op: op["ts_us"])]
    et_ops = [n for n in host["nodes"] if not n["name"].startswith(("[pytorch", "## process"))]
    assert sorted(n["id"] for n in et_ops) == sorted(op["host_id"] for op in covered)


def test_no_rf_id_and_no_flows(tmp_path: Path) -> None:
    options = SynthOptions(seed=1, ops_per_step=40, rf_id_in_kineto=False, flows=False)
    summary = generate_job(options, tmp_path)
    assert _kineto_events(summary.ranks[0].kineto, "ac2g") == []
    cpu_ops = _kineto_events(summary.ranks[0].kineto, "cpu_op")
    assert all("External id" in e["args"] and "Record function id" not in e["args"]
               for e in cpu_ops)  # fmt: skip


def test_integer_timestamps_are_integers(tmp_path: Path) -> None:
    summary = generate_job(SynthOptions(ops_per_step=30, integer_timestamps=True), tmp_path)
    events = load_json(summary.ranks[1].kineto)["traceEvents"]
    assert all(isinstance(e["ts"], int) for e in events if "ts" in e)


def test_cpu_and_streams_have_idle_gaps(tmp_path: Path) -> None:
    summary = generate_job(SynthOptions(seed=8, ranks=2, steps=2, ops_per_step=60), tmp_path)
    truth = load_json(summary.ranks[0].truth)
    compute = sorted((op["ts_us"], op["ts_us"] + op["dur_us"]) for op in truth["gpu_ops"]
                     if op["stream"] == 7)  # fmt: skip
    assert any(b[0] - a[1] > 5.0 for a, b in zip(compute, compute[1:]))
    steps = {op["host_id"] for op in truth["host_ops"] if op["name"].startswith("ProfilerStep#")}
    shallow = sorted((op["ts_us"], op["ts_us"] + op["dur_us"]) for op in truth["host_ops"]
                     if op["parent_host_id"] in steps)  # fmt: skip
    assert all(b[0] > a[1] for a, b in zip(shallow, shallow[1:]))
    assert any(b[0] - a[1] > 2.0 for a, b in zip(shallow, shallow[1:]))
