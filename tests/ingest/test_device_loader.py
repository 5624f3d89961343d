"""Kineto trace loading: real traces of every vendor and vintage, edge cases, bad input."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from chakra.errors import TraceFormatError
from chakra.ingest import RuntimeKind, load_device_trace
from chakra.ingest.vocabulary import runtime_kind
from tests.conftest import assert_one_line_error


def hta(shared_traces: Path, name: str) -> Path:
    return shared_traces / "hta" / f"{name}.kineto.json.gz"


def kernels_by_stream(trace: Any) -> Counter:
    return Counter(e.stream for e in trace.gpu_ops if e.category == "kernel")


def test_simple_add(shared_traces: Path) -> None:
    trace = load_device_trace(hta(shared_traces, "simple_add"))
    assert kernels_by_stream(trace) == {7: 4}
    assert trace.count("ac2g") == len(trace.flows) == 19
    assert Counter(runtime_kind(e.name) for e in trace.runtime_calls)[
        RuntimeKind.SYNC_DEVICE] == 5  # fmt: skip
    assert all(e.rf_id is None for e in trace.cpu_ops)  # joined by External id only
    assert trace.rank == 0 and trace.steps == ()


def test_linear_many_iterations(shared_traces: Path) -> None:
    trace = load_device_trace(shared_traces / "param" / "linear.kineto.json.gz")
    assert len(trace.cpu_ops) == 37078
    by_category = Counter(e.category for e in trace.gpu_ops)
    assert by_category == {"kernel": 8716, "gpu_memset": 1640}
    assert trace.streams == (7,)
    assert len(trace.flows) == 24871


def test_event_sync_multi_stream(shared_traces: Path) -> None:
    trace = load_device_trace(hta(shared_traces, "event_sync_multi_stream"))
    assert trace.streams == (20, 24, 28)
    assert Counter(e.args.sync_kind for e in trace.cuda_syncs) == {
        "Event Sync": 3, "Stream Wait Event": 1, "Context Sync": 1}  # fmt: skip
    wait = next(e for e in trace.cuda_syncs if e.args.sync_kind == "Stream Wait Event")
    assert (wait.args.wait_on_stream, wait.args.wait_on_event_correlation, wait.stream) == (
        20, 1385, 24)  # fmt: skip
    assert all(e.rf_id is not None for e in trace.cpu_ops)


def test_nccl_data_modern_keys(shared_traces: Path) -> None:
    trace = load_device_trace(hta(shared_traces, "nccl_data"))
    assert sum(kernels_by_stream(trace).values()) == 2700
    assert set(kernels_by_stream(trace)) == {7, 40}
    assert (trace.rank, trace.world_size) == (0, 2)
    assert trace.distributed and trace.distributed.pg_config[0].pg_desc == "default_pg"
    assert any(e.name == "cudaLaunchKernelExC" for e in trace.runtime_calls)
    assert all(isinstance(e.ts_us, float) for e in trace.cpu_ops)
    nccl = [e for e in trace.gpu_ops if e.name.startswith("ncclKernel")]
    assert nccl and all(e.args.pg_name == "0" and e.args.collective_name for e in nccl)
    comms = [e for e in trace.cpu_ops if e.name == "record_param_comms"]
    assert any(e.args.in_msg_nelems == 2049000 and e.args.collective_name == "allreduce"
               for e in comms)  # fmt: skip
    assert (comms[0].args.collective_name, comms[0].args.in_msg_nelems) == ("broadcast", 53120)
    assert [s.number for s in trace.steps] == [4, 5, 6]


def test_amd_hip(shared_traces: Path) -> None:
    trace = load_device_trace(hta(shared_traces, "amd_mi250"))
    names = {e.name for e in trace.runtime_calls}
    assert {"hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemcpyWithStream"} <= names
    assert runtime_kind("hipExtModuleLaunchKernel") is RuntimeKind.LAUNCH
    assert trace.streams == (0,)
    copy_call = next(e for e in trace.runtime_calls if e.name == "hipMemcpyWithStream")
    assert copy_call.args.stream == "0x0" and copy_call.stream == 0


def test_triton_driver_launch(shared_traces: Path) -> None:
    trace = load_device_trace(hta(shared_traces, "triton_example"))
    (launch,) = [e for e in trace.runtime_calls if e.category == "cuda_driver"]
    (kernel,) = trace.gpu_ops
    assert launch.name == "cuLaunchKernel" and runtime_kind(launch.name) is RuntimeKind.LAUNCH
    assert launch.correlation == kernel.correlation == 35


def test_alexnet_two_streams_and_syncs(shared_traces: Path) -> None:
    trace = load_device_trace(hta(shared_traces, "alexnet"))
    assert kernels_by_stream(trace) == {7: 73, 20: 6}
    assert len(trace.cuda_syncs) == 41


# --- hand-made traces -------------------------------------------------------------------------


def kineto(events: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    return {"schemaVersion": 1, "traceEvents": events, **top}


def write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document))
    return path


def op(name: str, ts: Any, dur: Any = 10, cat: str = "cpu_op", **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def test_groups_are_sorted_parents_first(tmp_path: Path) -> None:
    events = [
        op("inner", 100, 5),
        op("outer", 100, 50),
        op("later", 200.5),
        op("ProfilerStep#3", 90, 200, cat="user_annotation"),
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}},
    ]
    trace = load_device_trace(write(tmp_path / "k.json", kineto(events)))
    assert [e.name for e in trace.cpu_ops] == ["outer", "inner", "later"]
    assert [(s.number, s.ts_us, s.end_us) for s in trace.steps] == [(3, 90, 290)]
    assert trace.thread_names == ((1, 1, "main"),)


@pytest.mark.parametrize("digits", ["9" * 5000, str(2**63)])
def test_a_step_number_beyond_int64_is_one_line(tmp_path: Path, digits: str) -> None:
    """``ProfilerStep#`` and 5,000 digits: ``int`` refused it (ValueError, a traceback in
    trace_info and trace_link; issue 30, finding 9)."""
    events = [op("x", 100), op(f"ProfilerStep#{digits}", 90, 200, cat="user_annotation")]
    path = write(tmp_path / "k.json", kineto(events))
    shown = digits if len(digits) < 25 else "99999999999999999999... (5,000 digits)"
    expected = f"event 1 (ProfilerStep#{shown}): the step number is not 0 to 2^63-1"
    assert_one_line_error(load_device_trace, path, expected, TraceFormatError)
    events[1] = op(f"ProfilerStep#{2**63 - 1}", 90, 200, cat="user_annotation")
    steps = load_device_trace(write(tmp_path / "k.json", kineto(events))).steps
    assert [step.number for step in steps] == [2**63 - 1]


def test_string_ids_are_coerced(tmp_path: Path) -> None:
    events = [op("x", 1, **{"External id": "12", "Ev Idx": "3"})]
    (event,) = load_device_trace(write(tmp_path / "k.json", kineto(events))).cpu_ops
    assert (event.external_id, event.args.ev_idx) == (12, 3)


def test_a_trace_without_recognised_events_is_an_error(tmp_path: Path) -> None:
    empty = write(tmp_path / "empty.json", kineto([]))
    assert_one_line_error(load_device_trace, empty, "empty.json: no recognised Kineto events "
                          "(the trace has no events)", TraceFormatError)  # fmt: skip
    foreign = [op("a", 1, cat="Foo"), op("b", 2, cat="Bar"), op("c", 3, cat="Foo"),
               {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "x"}}]  # fmt: skip
    path = write(tmp_path / "x.json", kineto(foreign))
    expected = "x.json: no recognised Kineto events (categories seen: Foo 2, (no cat) 1, Bar 1)"
    assert_one_line_error(load_device_trace, path, expected, TraceFormatError)


def test_a_trace_with_only_a_cpu_op_loads(tmp_path: Path) -> None:
    trace = load_device_trace(write(tmp_path / "k.json", kineto([op("x", 1, cat="Trace"),
                                                                 op("y", 2)])))  # fmt: skip
    assert [e.name for e in trace.cpu_ops] == ["y"]


def legacy_event(cat: str, name: str, ts: int, dur: int, **args: Any) -> dict[str, Any]:
    """An event as a 2021 Kineto wrote it: GPU events on pid 0 with a "stream N" tid."""
    gpu = cat in ("Kernel", "Memcpy", "Memset")
    return {"ph": "X", "cat": cat, "name": name, "pid": 0 if gpu else 4242,
            "tid": "stream 7" if gpu else "4243", "ts": ts, "dur": dur, "args": args}  # fmt: skip


def test_a_2021_kineto_trace_loads_with_todays_categories(tmp_path: Path) -> None:
    gpu = {"stream": 7, "device": 0}
    events = [
        legacy_event("Trace", "PyTorch Profiler (0)", 0, 600),
        legacy_event("Operator", "ProfilerStep#1", 50, 400, **{"External id": 1}),
        legacy_event("Operator", "aten::to", 100, 60, **{"External id": 2}),
        legacy_event("Runtime", "cudaMemcpyAsync", 110, 20, correlation=11, **{"external id": 2}),
        legacy_event("Memcpy", "Memcpy HtoD (Pageable -> Device)", 135, 10, correlation=11,
                     **gpu, **{"external id": 2}),
        legacy_event("Operator", "aten::mm", 200, 100, **{"External id": 3}),
        legacy_event("Runtime", "cudaLaunchKernel", 210, 5, correlation=12, **{"external id": 3}),
        legacy_event("Kernel", "gemm", 220, 30, correlation=12, grid=[1, 1, 1], **gpu,
                     **{"external id": 3}),
        legacy_event("Runtime", "cudaMemsetAsync", 260, 4, correlation=13, **{"external id": 3}),
        legacy_event("Memset", "Memset (Device)", 270, 2, correlation=13, **gpu,
                     **{"external id": 3}),
        legacy_event("User Annotation", "forward", 190, 120),
        legacy_event("Python", "train.py(10): step", 40, 500),
    ]  # fmt: skip
    trace = load_device_trace(write(tmp_path / "old.json", kineto(events)))
    assert [(e.name, e.category, e.external_id) for e in trace.cpu_ops] == [
        ("aten::to", "cpu_op", 2),
        ("forward", "user_annotation", None),
        ("aten::mm", "cpu_op", 3),
    ]
    assert [s.number for s in trace.steps] == [1]
    assert [(e.name, e.category, e.correlation, e.external_id) for e in trace.runtime_calls] == [
        ("cudaMemcpyAsync", "cuda_runtime", 11, 2),
        ("cudaLaunchKernel", "cuda_runtime", 12, 3),
        ("cudaMemsetAsync", "cuda_runtime", 13, 3),
    ]
    assert [(e.category, e.correlation, e.external_id, e.stream) for e in trace.gpu_ops] == [
        ("gpu_memcpy", 11, 2, 7),
        ("kernel", 12, 3, 7),
        ("gpu_memset", 13, 3, 7),
    ]
    assert dict(trace.category_counts) == {"Trace": 1, "Operator": 3, "Runtime": 3, "Memcpy": 1,
                                           "Kernel": 1, "Memset": 1, "User Annotation": 1,
                                           "Python": 1}  # fmt: skip


BAD_DOCUMENTS: dict[str, tuple[Any, str]] = {
    "host_passed_as_kineto": ({"schema": "1.0.1", "nodes": []}, "this is a host execution"),
    "non_numeric_ts": (kineto([op("x", "soon")]),
                       "Expected `int | float | null`, got `str` (at traceEvents[0].ts)"),
    "missing_ts": (kineto([{"ph": "X", "cat": "kernel", "name": "k", "dur": 3}]),
                   "event 0 ('k', ph 'X') has no 'ts'"),
    "negative_dur": (kineto([op("x", 5, -2)]), "negative duration -2"),
    "no_trace_events": ({"schemaVersion": 1}, "missing required field `traceEvents`"),
    "events_not_a_list": (kineto({"a": 1}), "Expected `array`, got `object`"),  # type: ignore[arg-type]
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD_DOCUMENTS))
def test_bad_documents_give_one_line_naming_the_file(tmp_path: Path, case: str) -> None:
    document, expected = BAD_DOCUMENTS[case]
    path = write(tmp_path / f"{case}.json", document)
    assert_one_line_error(load_device_trace, path, expected, TraceFormatError)


def test_truncated_inputs(tmp_path: Path) -> None:
    text = json.dumps(kineto([op("x", 1), op("y", 2)])).encode()
    cut = tmp_path / "cut.json"
    cut.write_bytes(text[: len(text) // 2])
    with pytest.raises(TraceFormatError, match=r"not a valid Kineto trace: Input data was trunc"):
        load_device_trace(cut)
    cut_gz = tmp_path / "cut.json.gz"
    cut_gz.write_bytes(gzip.compress(text)[:-8])
    with pytest.raises(TraceFormatError, match="corrupt or truncated gzip data"):
        load_device_trace(cut_gz)


def test_event_sync_single_stream(shared_traces: Path) -> None:
    trace = load_device_trace(hta(shared_traces, "event_sync"))
    assert trace.streams == (7,)
    assert Counter(e.args.sync_kind for e in trace.cuda_syncs) == {
        "Event Sync": 2, "Stream Sync": 1, "Context Sync": 1}  # fmt: skip
    kinds = Counter(runtime_kind(e.name) for e in trace.runtime_calls)
    assert kinds[RuntimeKind.SYNC_EVENT] == kinds[RuntimeKind.SYNC_STREAM] == 1
    assert [s.number for s in trace.steps] == [100]
