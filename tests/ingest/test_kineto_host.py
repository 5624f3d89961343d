"""A host ET made from a Kineto trace alone (issue 33, first step), on every Kineto trace of
the shared HTA set: each CPU op and step annotation becomes a host op under the innermost
op of its thread that encloses it (checked here from the events' own times, not from the
code's stack), and the result links, converts and replays as measured."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from chakra.convert import ConvertOptions, convert_et_plus
from chakra.ingest import load_device_trace
from chakra.ingest.host_model import HostTrace
from chakra.ingest.kineto_host import host_trace_from_kineto
from chakra.link import LinkOptions, link_traces
from chakra.link.et_plus import as_et_plus
from chakra.simulate import build_graph, simulate

TRACES = ["alexnet", "amd_mi250", "event_sync", "event_sync_multi_stream", "nccl_data",
          "simple_add", "triton_example"]  # fmt: skip


@pytest.mark.parametrize("name", TRACES)
def test_each_op_is_under_the_innermost_op_that_encloses_it(shared_traces: Path, name: str) -> None:
    device = load_device_trace(shared_traces / "hta" / f"{name}.kineto.json.gz")
    host = host_trace_from_kineto(device)
    events = [*device.cpu_ops, *(step.event for step in device.steps)]
    tables = int(device.distributed is not None and bool(device.distributed.pg_config))
    assert len(host.ops) == len(events) + 1 + len({(e.pid, e.tid) for e in events}) + tables
    by_id = {op.id: op for op in host.ops}
    span = {}  # host op id -> (thread, begin, end), from the ops' events in id order
    ordered = sorted(events, key=lambda e: (float(e.ts_us or 0), -float(e.dur_us)))
    skipped = ("## process_group:init ##",)
    made = [op for op in host.ops
            if not (op.is_process_root or op.is_thread_root or op.name in skipped)]  # fmt: skip
    for op, event in zip(made, ordered):
        assert op.name == event.name and op.rf_id == event.args.rf_id
        span[op.id] = ((event.pid, event.tid), float(event.ts_us or 0), float(event.end_us))
    for op_id, (thread, begin, end) in span.items():
        parent = by_id[by_id[op_id].parent_id]
        enclosing = [i for i, (t, b, e) in span.items()
                     if i < op_id and t == thread and b <= begin and end <= e + 1e-6]  # fmt: skip
        op = by_id[op_id]
        if parent.is_thread_root or (op.name.startswith("gloo:") and parent.tid != op.tid):
            assert not enclosing, (name, op_id)  # a worker's collective: under its enqueuer
        else:
            assert parent.id in enclosing and parent.id == max(enclosing), (name, op_id)


@pytest.mark.parametrize("name", TRACES)
def test_a_kineto_trace_alone_links_converts_and_replays_as_measured(
    shared_traces: Path, name: str
) -> None:
    logging.disable(logging.WARNING)
    try:
        device = load_device_trace(shared_traces / "hta" / f"{name}.kineto.json.gz")
        linked = link_traces(host_trace_from_kineto(device), device, LinkOptions())
        graph = convert_et_plus(as_et_plus(linked), ConvertOptions(rank=0))
        rank = simulate([build_graph(graph.nodes, 0)]).ranks[0]
    finally:
        logging.disable(logging.NOTSET)
    assert len(linked.gpu_nodes) == len(device.gpu_ops) > 0
    assert rank.error_pct is not None and abs(rank.error_pct) < 0.01


def test_a_worker_collective_is_filed_under_the_op_that_enqueued_it(tmp_path: Path) -> None:
    """PyTorch opens a gloo worker's record function inside the ``c10d::`` op that enqueued
    it (its id is that op's plus one): the host ET files it there, and so does the host side
    made from Kineto; what the worker runs inside it stays under the worker's thread root,
    as a host ET records it (so the linker places the collective on the worker). A top-level
    op of another name, or ids not consecutive, stays top level."""
    main, worker = 10, 20
    path = _kineto_file(tmp_path / "k.json", [
        ("c10d::allreduce_", main, 100.0, 5.0, 7),
        ("gloo:all_reduce", worker, 110.0, 50.0, 8),
        ("aten::view", worker, 115.0, 5.0, 11),  # the worker's own op: under its thread root
        ("c10d::allreduce_", main, 200.0, 5.0, 9),
        ("gloo:all_reduce", worker, 210.0, 50.0, 12),  # not consecutive: left alone
        ("aten::add", worker, 300.0, 5.0, 10),  # consecutive, but not a collective
    ])  # fmt: skip
    host = host_trace_from_kineto(load_device_trace(path))
    by_rf = {op.rf_id: op for op in host.ops if op.rf_id is not None}
    assert by_rf[8].parent_id == by_rf[7].id
    assert by_id_name(host, by_rf[11].parent_id).startswith(
        "[pytorch|profiler|execution_trace|thread"
    )
    assert by_id_name(host, by_rf[12].parent_id).startswith(
        "[pytorch|profiler|execution_trace|thread"
    )
    assert by_id_name(host, by_rf[10].parent_id).startswith(
        "[pytorch|profiler|execution_trace|thread"
    )


def by_id_name(host: HostTrace, op_id: int) -> str:
    return next(op.name for op in host.ops if op.id == op_id)


def _kineto_file(path: Path, ops: list[tuple[str, int, float, float, int]]) -> Path:
    """A Kineto trace of CPU ops ``(name, tid, ts, dur, record function id)``."""
    events = [{"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts,
               "dur": dur, "args": {"Record function id": rf_id}}
              for name, tid, ts, dur, rf_id in ops]  # fmt: skip
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path
