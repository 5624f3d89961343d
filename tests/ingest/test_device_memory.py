"""The lean in-memory form of a loaded Kineto trace: shared strings, compact args per kind of
event, flows stored by column, the file's bytes released, and values identical to a plain
decode of every event."""

from __future__ import annotations

import json
import sys
import tracemalloc
from pathlib import Path
from typing import Any, Optional

import msgspec
import pytest
from msgspec import field

from chakra.fileio import read_input
from chakra.ingest import load_device_trace
from chakra.ingest.device_args import (
    COMPACT_ARGS,
    CpuOpArgs,
    GpuOpArgs,
    RuntimeArgs,
    SyncArgs,
    args_decoder,
    decode_args,
)
from chakra.ingest.device_flows import FlowEvents
from chakra.ingest.device_model import NO_ARGS, KinetoArgs, KinetoEvent
from tests.conftest import assert_one_line_error

KINETO_TRACES = [
    "hta/simple_add", "hta/event_sync", "hta/event_sync_multi_stream", "hta/alexnet",
    "hta/nccl_data", "hta/amd_mi250", "hta/triton_example", "param/linear",
]  # fmt: skip
GROUPS = {
    "cpu_ops": {"cpu_op", "user_annotation"}, "runtime_calls": {"cuda_runtime", "cuda_driver"},
    "gpu_ops": {"kernel", "gpu_memcpy", "gpu_memset"}, "cuda_syncs": {"cuda_sync"},
    "gpu_annotations": {"gpu_user_annotation"}, "flows": {"ac2g"},
}  # fmt: skip


def write(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def event(cat: str, name: str, ts: Any, ph: str = "X", **args: Any) -> dict[str, Any]:
    return {"ph": ph, "cat": cat, "name": name, "pid": 123456, "tid": 654321, "ts": ts,
            "dur": 1, "args": args}  # fmt: skip


def values(e: KinetoEvent) -> tuple:
    """Everything an event holds, with the type of each number."""
    args = tuple((getattr(e.args, n), type(getattr(e.args, n)).__name__)
                 for n in KinetoArgs.__struct_fields__)  # fmt: skip
    head = (e.phase, e.category, e.name, e.pid, e.tid, e.ts_us, e.dur_us, e.flow_id)
    return (*head, tuple(type(v).__name__ for v in head), args)


class _Reference(msgspec.Struct):
    """The document as the loader decoded it before: every event a full KinetoEvent."""

    trace_events: list[KinetoEvent] = field(name="traceEvents")


def reference_groups(data: bytes) -> dict[str, list[tuple]]:
    events = msgspec.json.decode(data, type=_Reference, strict=False).trace_events
    groups = {}
    for group, categories in GROUPS.items():
        kept = [e for e in events if e.category in categories and e.phase != "M"]
        if group == "cpu_ops":
            kept = [e for e in kept if not e.name.startswith("ProfilerStep#")]
        kept.sort(key=lambda e: (e.ts_us, -e.dur_us))
        groups[group] = [values(e) for e in kept]
    return groups


@pytest.mark.parametrize("name", KINETO_TRACES)
@pytest.mark.slow
def test_real_traces_hold_the_values_of_a_plain_decode(shared_traces: Path, name: str) -> None:
    path = shared_traces / f"{name}.kineto.json.gz"
    trace = load_device_trace(path)
    expected = reference_groups(read_input(path))
    for group, rows in expected.items():
        assert [values(e) for e in getattr(trace, group)] == rows, group


def test_equal_strings_and_ids_are_one_object(tmp_path: Path) -> None:
    events = [event("cpu_op", "aten::" + "x" * 40, ts) for ts in (1, 2, 3)]
    events += [event("kernel", "gemm_kernel_" + "y" * 100, ts, stream=7) for ts in (4, 5)]
    trace = load_device_trace(write(tmp_path / "k.json", events))
    for group in (trace.cpu_ops, trace.gpu_ops):
        first, *others = group
        for other in others:
            assert other.name is first.name and other.category is first.category
            assert other.phase is first.phase
            assert other.pid is first.pid and other.tid is first.tid  # beyond small ints
    assert trace.cpu_ops[0].pid is trace.gpu_ops[0].pid


def test_each_kind_keeps_its_args_in_its_compact_class(tmp_path: Path) -> None:
    events = [
        event(
            "cpu_op",
            "aten::mm",
            1,
            **{
                "External id": 11,
                "Record function id": 12,
                "Ev Idx": 13,
                "Sequence number": 14,
                "Fwd thread id": 15,
            },
        ),
        event(
            "cuda_runtime",
            "cudaLaunchKernel",
            2,
            **{"External id": 11, "cbid": 211, "correlation": 21},
        ),
        event(
            "kernel",
            "gemm",
            3,
            **{"External id": 11, "correlation": 21, "device": 0, "stream": 7, "grid": [1, 1, 1]},
        ),
        event(
            "gpu_memcpy",
            "Memcpy HtoD",
            4,
            device=0,
            stream=7,
            correlation=22,
            bytes=64,
            kind="HtoD",
        ),
        event(
            "cuda_sync",
            "Stream Wait Event",
            5,
            cuda_sync_kind="Stream Wait Event",
            wait_on_stream=9,
            wait_on_cuda_event_record_corr_id=20,
            wait_on_cuda_event_id=1,
            stream=7,
            correlation=23,
            device=0,
        ),
        event("gpu_user_annotation", "step", 6, **{"External id": 3, "device": 0}),
    ]
    trace = load_device_trace(write(tmp_path / "k.json", events))
    (cpu,), (call,), (sync,), (note,) = (
        trace.cpu_ops, trace.runtime_calls, trace.cuda_syncs, trace.gpu_annotations)  # fmt: skip
    kernel, copy = trace.gpu_ops
    assert cpu.args == CpuOpArgs(11, 12, 13, 14, 15)
    assert (cpu.external_id, cpu.rf_id, cpu.correlation) == (11, 12, None)
    assert call.args == RuntimeArgs(external_id=11, correlation=21, cbid=211)
    assert kernel.args == GpuOpArgs(external_id=11, correlation=21, device=0, stream=7)
    assert (kernel.stream, kernel.correlation, kernel.args.pg_name) == (7, 21, None)
    assert copy.args == GpuOpArgs(correlation=22, device=0, stream=7, nbytes=64, copy_kind="HtoD")
    assert sync.args == SyncArgs(correlation=23, device=0, stream=7,
                                 sync_kind="Stream Wait Event", wait_on_stream=9,
                                 wait_on_event_correlation=20, wait_on_event_id=1)  # fmt: skip
    assert note.args == GpuOpArgs(external_id=3, device=0)
    for e in (cpu, call, kernel, copy, sync, note):  # every KinetoArgs attribute answers
        assert all(hasattr(e.args, name) for name in KinetoArgs.__struct_fields__)


def test_a_key_outside_the_compact_class_keeps_full_args(tmp_path: Path) -> None:
    nccl = {
        "External id": 5,
        "correlation": 8,
        "device": 0,
        "stream": 40,
        "Collective name": "allreduce",
        "Process Group Name": "0",
        "In msg nelems": 4,
    }
    comms = {"External id": 5, "Record function id": 6, "Collective name": "allreduce",
             "Group size": 2, "dtype": "Float"}  # fmt: skip
    events = [event("kernel", "ncclKernel_AllReduce", 1, **nccl),
              event("cpu_op", "record_param_comms", 1, **comms)]  # fmt: skip
    trace = load_device_trace(write(tmp_path / "k.json", events))
    (kernel,), (cpu,) = trace.gpu_ops, trace.cpu_ops
    assert type(kernel.args) is KinetoArgs and type(cpu.args) is KinetoArgs
    assert (kernel.args.collective_name, kernel.args.pg_name, kernel.args.in_msg_nelems) == (
        "allreduce", "0", 4)  # fmt: skip
    assert (kernel.stream, kernel.correlation, cpu.rf_id, cpu.args.group_size) == (40, 8, 6, 2)


def test_args_without_keys_read_share_one_instance(tmp_path: Path) -> None:
    events = [
        event("cpu_op", "a", 1),
        event("cpu_op", "b", 2, context=1),
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 3, "dur": 1},
    ]
    trace = load_device_trace(write(tmp_path / "k.json", events))
    a, b = trace.cpu_ops
    assert a.args is b.args and trace.gpu_ops[0].args is NO_ARGS


@pytest.mark.parametrize("category", sorted(COMPACT_ARGS))
def test_decode_args_matches_a_full_decode(category: str) -> None:
    decoder = args_decoder(COMPACT_ARGS[category])
    samples = [b'{"External id": 1, "correlation": 2, "stream": "0x0", "device": 3}',
               b'{"Record function id": 4, "Ev Idx": 5, "context": 1, "grid": [1, 2]}',
               b'{"cuda_sync_kind": "Event Sync", "bytes": 9, "kind": 1}',
               b'{"name": "x", "Process Group Ranks": [0, 1], "dtype": "Half"}', b"{}"]  # fmt: skip
    full = msgspec.json.Decoder(KinetoArgs, strict=False)
    for sample in samples:
        got, want = decode_args(decoder, msgspec.Raw(sample)), full.decode(sample)
        for name in KinetoArgs.__struct_fields__:
            assert getattr(got, name) == getattr(want, name), (sample, name)


# a trace of flows alone is refused (no recognised events): each flow test adds one CPU op
AN_OP = {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 0, "dur": 1}


def test_flows_are_a_sequence_of_events(tmp_path: Path) -> None:
    flows = [
        {"ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": 10.5, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": 7, "pid": 0, "tid": 7, "ts": 12.25, "cat": "ac2g", "name": "ac2g",
         "bp": "e"},
        {"ph": "s", "id": 3, "pid": 1, "tid": 1, "ts": 1.0, "cat": "ac2g", "name": "ac2g"},
    ]  # fmt: skip
    trace = load_device_trace(write(tmp_path / "k.json", [*flows, AN_OP]))
    assert isinstance(trace.flows, FlowEvents) and len(trace.flows) == 3
    expected = (
        KinetoEvent("s", "ac2g", "ac2g", 1, 1, 1.0, 0, 3),
        KinetoEvent("s", "ac2g", "ac2g", 1, 1, 10.5, 0, 7),
        KinetoEvent("f", "ac2g", "ac2g", 0, 7, 12.25, 0, 7),
    )
    assert trace.flows == expected and tuple(trace.flows) == expected
    assert trace.flows[-1] == expected[-1] and trace.flows[1:] == expected[1:]
    assert trace.flows[0].args is NO_ARGS and isinstance(trace.flows[0].ts_us, float)
    with pytest.raises(IndexError):
        trace.flows[3]


@pytest.mark.parametrize(
    "odd", [{"id": "x7"}, {"ts": 11}, {"dur": 2}, {"args": {"correlation": 1}}, {"id": 2**70}]
)
def test_flows_that_do_not_fit_columns_stay_events(tmp_path: Path, odd: dict) -> None:
    base = {"ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": 10.5, "cat": "ac2g", "name": "ac2g"}
    events = [base, {**base, "ts": 12.5, **odd}]
    trace = load_device_trace(write(tmp_path / "k.json", [*events, AN_OP]))
    assert type(trace.flows) is tuple and len(trace.flows) == 2
    reference = reference_groups(json.dumps({"traceEvents": events}).encode())["flows"]
    assert [values(e) for e in trace.flows] == reference


def test_integer_flow_starts_stay_integers(tmp_path: Path) -> None:
    flows = [{"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 1689180448563241, "cat": "ac2g",
              "name": "ac2g"}]  # fmt: skip
    (flow,) = load_device_trace(write(tmp_path / "k.json", [*flows, AN_OP])).flows
    assert flow.ts_us == 1689180448563241 and type(flow.ts_us) is int


def test_the_file_bytes_are_not_kept(tmp_path: Path) -> None:
    path = write(tmp_path / "k.json", [event("cpu_op", "a", 1, **{"External id": 1})])
    data = path.read_bytes()
    before = sys.getrefcount(data)
    trace = load_device_trace(path, data)
    assert sys.getrefcount(data) == before and trace.cpu_ops


@pytest.mark.slow
def test_a_loaded_trace_is_smaller_than_its_file(tmp_path: Path) -> None:
    from chakra.synth import SynthOptions, generate_job

    generate_job(SynthOptions(seed=3, ranks=1, ops_per_step=1500), tmp_path)
    data = read_input(tmp_path / "rank0.kineto.json")
    tracemalloc.start()
    try:
        trace: Optional[Any] = load_device_trace("rank0.kineto.json", data)
        kept, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert trace is not None and kept < 1.2 * len(data)  # 3.5x before the compact form


ARGS_ERRORS = [
    ({"External id": "abc", "grid": [1]}, "kernel",
     "Expected `int | null`, got `str` (at traceEvents[0].args.External id)"),
    ({"Record function id": [1]}, "cpu_op",
     "Expected `int | null`, got `array` (at traceEvents[0].args.Record function id)"),
    (7, "cpu_op", "Expected `object`, got `int` (at traceEvents[0].args)"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "cat", "expected"), ARGS_ERRORS)
def test_bad_args_are_worded_as_a_whole_document_decode(
    tmp_path: Path, args: Any, cat: str, expected: str
) -> None:
    bad = {"ph": "X", "cat": cat, "name": "k", "ts": 1, "dur": 1, "args": args}
    path = write(tmp_path / "k.json", [bad])
    assert_one_line_error(load_device_trace, path, f"not a valid Kineto trace: {expected}")
