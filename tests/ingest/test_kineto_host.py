"""A host ET made from a Kineto trace alone (issue 33, first step), on every Kineto trace of
the shared HTA set: each CPU op and step annotation becomes a host op under the innermost
op of its thread that encloses it (checked here from the events' own times, not from the
code's stack), and the result links, converts and replays as measured."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from chakra.convert import ConvertOptions, convert_et_plus
from chakra.ingest import load_device_trace
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
    assert len(host.ops) == len(events) + 1 + len({(e.pid, e.tid) for e in events})
    by_id = {op.id: op for op in host.ops}
    span = {}  # host op id -> (thread, begin, end), from the ops' events in id order
    ordered = sorted(events, key=lambda e: (float(e.ts_us or 0), -float(e.dur_us)))
    made = [op for op in host.ops if not (op.is_process_root or op.is_thread_root)]
    for op, event in zip(made, ordered):
        assert op.name == event.name and op.rf_id == event.args.rf_id
        span[op.id] = ((event.pid, event.tid), float(event.ts_us or 0), float(event.end_us))
    for op_id, (thread, begin, end) in span.items():
        parent = by_id[by_id[op_id].parent_id]
        enclosing = [i for i, (t, b, e) in span.items()
                     if i < op_id and t == thread and b <= begin and end <= e + 1e-6]  # fmt: skip
        if parent.is_thread_root:
            assert not enclosing, (name, op_id)
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
