"""Real torch 2.13 CPU profiles recorded with Kineto alone, no host ET (issue 33, item 5;
tests/data/pytorch213/kineto_only, facts in the README there): the host side made from each
one holds exactly the trace's CPU ops and annotations, their shapes when recorded, the gloo
ranks' process groups, and links, converts and replays as measured.

Every expectation is read here from the raw JSON (gzip + json), not through chakra's loader.
"""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from chakra.convert import ConvertOptions, convert_et_plus
from chakra.ingest import load_device_trace
from chakra.ingest.host_model import HostOp, HostTrace
from chakra.ingest.kineto_host import host_trace_from_kineto
from chakra.link import LinkOptions, link_traces
from chakra.link.et_plus import as_et_plus
from chakra.link.linked_trace import LinkedTrace
from chakra.ranks import agree, patched
from chakra.ranks.files import record_of
from chakra.simulate import build_graph, simulate
from tests.conftest import REPO_ROOT

DATA = REPO_ROOT / "tests" / "data" / "pytorch213" / "kineto_only"
SHAPES = DATA / "single" / "shapes.kineto.json.gz"
NOSHAPES = DATA / "single" / "noshapes.kineto.json.gz"
RANKS = [DATA / "gloo_2rank" / f"rank{r}.kineto.json.gz" for r in range(2)]
ALL = [SHAPES, NOSHAPES, *RANKS]
IDS = ["shapes", "noshapes", "gloo_rank0", "gloo_rank1"]
RFID = "Record function id"
PG_INIT = "## process_group:init ##"
Event = dict[str, Any]


def raw_trace(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        trace: dict[str, Any] = json.load(f)
    return trace


def raw_host_events(path: Path) -> list[Event]:
    """The trace's ``cpu_op`` and ``user_annotation`` events (ProfilerStep#N included), in
    start order, an enclosing event (equal start, longer) first."""
    events = [e for e in raw_trace(path)["traceEvents"]
              if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")]  # fmt: skip
    return sorted(events, key=lambda e: (float(e["ts"]), -float(e["dur"])))


def made_ops(host: HostTrace) -> list[HostOp]:
    """The host ops made from events (not the roots or the process-group table), by id."""
    return sorted((op for op in host.ops
                   if not (op.is_process_root or op.is_thread_root or op.name == PG_INIT)),
                  key=lambda op: op.id)  # fmt: skip


def pairs(path: Path) -> tuple[HostTrace, list[tuple[HostOp, Event]]]:
    host = host_trace_from_kineto(load_device_trace(path))
    ops, events = made_ops(host), raw_host_events(path)
    assert len(ops) == len(events)
    return host, list(zip(ops, events))


@contextmanager
def quiet() -> Iterator[None]:
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_one_host_op_per_cpu_op_and_annotation_with_its_name_and_id(path: Path) -> None:
    host, matched = pairs(path)
    events = raw_host_events(path)
    threads = {(e["pid"], e["tid"]) for e in events}
    assert sum(op.is_process_root for op in host.ops) == 1
    assert sum(op.is_thread_root for op in host.ops) == len(threads)
    steps = [e["name"] for e in events if e["name"].startswith("ProfilerStep#")]
    assert steps == [op.name for op in host.ops if op.name.startswith("ProfilerStep#")]
    for op, event in matched:
        assert (op.name, op.rf_id) == (event["name"], event["args"][RFID])
    # one synthetic thread per Kineto thread, and back
    tid_of = {(e["pid"], e["tid"]): op.tid for op, e in matched}
    assert all(tid_of[(e["pid"], e["tid"])] == op.tid for op, e in matched)
    assert len(set(tid_of.values())) == len(threads)


@pytest.mark.parametrize("path", [SHAPES, *RANKS], ids=["shapes", "gloo_rank0", "gloo_rank1"])
def test_recorded_shapes_and_types_are_kept(path: Path) -> None:
    host, matched = pairs(path)
    assert raw_trace(path)["record_shapes"] == 1
    with_dims = 0
    for op, event in matched:
        dims, types = event["args"].get("Input Dims"), event["args"].get("Input type")
        with_dims += dims is not None
        assert op.inputs.shapes == (dims or []) and op.inputs.types == (types or []), op.name
    assert with_dims > 0.9 * len(matched)
    assert not any("record_shapes" in note for note in host.notes)


def test_without_record_shapes_inputs_are_empty_and_the_notes_say_so() -> None:
    host, matched = pairs(NOSHAPES)
    assert "record_shapes" not in raw_trace(NOSHAPES)
    assert not any("Input Dims" in e["args"] or "Input type" in e["args"] for _, e in matched)
    assert all(op.inputs.shapes == [] and op.inputs.types == [] for op, _ in matched)
    assert any("no input shapes" in note and "record_shapes" in note for note in host.notes)


@pytest.mark.parametrize("path", RANKS, ids=IDS[2:])
def test_record_param_comms_ops_keep_their_collective(path: Path) -> None:
    """Each ``record_param_comms`` event becomes a host op with its collective. (torch 2.13's
    gloo emits none: the recordings have 0, so only the count is checked on them.)"""
    _, matched = pairs(path)
    comms = [(op, e) for op, e in matched if e["name"] == "record_param_comms"]
    assert len(comms) == sum(op.is_record_param_comms for op, _ in matched)
    for op, event in comms:
        args = event["args"]
        assert op.comm is not None
        assert op.comm.collective_name == args["Collective name"]
        assert op.comm.in_msg_nelems == args["In msg nelems"]
        assert op.comm.pg_name == str(args["Process Group Name"])


def test_gloo_in_torch_213_writes_no_record_param_comms_and_no_record_function_ids() -> None:
    """What these profiles lack, as recorded (README "Surprises"): without an execution trace
    observer every ``Record function id`` is 0, and gloo emits no ``record_param_comms``."""
    for path in ALL:
        events = raw_host_events(path)
        assert {e["args"][RFID] for e in events} == {0}
        assert not [e for e in raw_trace(path)["traceEvents"] if e["name"] == "record_param_comms"]


@pytest.mark.parametrize("path", RANKS, ids=IDS[2:])
def test_distributed_info_groups_become_a_process_group_init_op(path: Path) -> None:
    host = host_trace_from_kineto(load_device_trace(path))
    (table_op,) = [op for op in host.ops if op.name == PG_INIT]
    groups = json.loads(table_op.inputs.values[0])
    config = raw_trace(path)["distributedInfo"]["pg_config"]
    assert len(groups) == len(config) == 1
    for group, raw in zip(groups, config):
        assert group["pg_name"] == str(raw["pg_name"])
        assert group["pg_desc"] == raw["pg_desc"]
        assert group["backend_config"] == raw["backend_config"]
        assert group["ranks"] == raw["ranks"] and group["group_size"] == raw["pg_size"]


def worker_enqueuers(path: Path) -> list[tuple[Event, Event]]:
    """(gloo op on a worker thread, the ``c10d::`` op of the main thread that enqueued it).
    With every record-function id 0 the ids cannot say it; the k-th collective started on
    the workers is the k-th ``c10d::`` op started on the main thread (checked: each starts
    after its own ``c10d::`` op and before the next one)."""
    events = raw_host_events(path)
    main = max({e["tid"] for e in events}, key=lambda t: sum(e["tid"] == t for e in events))
    enqueued = [e for e in events if e["name"].startswith("c10d::") and e["tid"] == main]
    run = [e for e in events if e["name"].startswith("gloo:") and e["tid"] != main]
    assert len(enqueued) == len(run) == 4
    ends = [float(e["ts"]) for e in enqueued[1:]] + [float("inf")]
    for c10d, gloo, next_start in zip(enqueued, run, ends):
        assert float(c10d["ts"]) < float(gloo["ts"]) < next_start
        assert (c10d["name"], gloo["name"]) == ("c10d::allreduce_", "gloo:all_reduce")
    return list(zip(run, enqueued))


@pytest.mark.parametrize("path", RANKS, ids=IDS[2:])
def test_worker_collectives_follow_their_c10d_ops_in_start_order(path: Path) -> None:
    assert len(worker_enqueuers(path)) == 4


@pytest.mark.parametrize("path", RANKS, ids=IDS[2:])
def test_worker_collectives_are_filed_under_the_c10d_op_that_enqueued_them(path: Path) -> None:
    _, matched = pairs(path)
    op_of = {(e["name"], e["tid"], e["ts"]): op for op, e in matched}
    for gloo, c10d in worker_enqueuers(path):
        parent = op_of[(gloo["name"], gloo["tid"], gloo["ts"])].parent_id
        assert parent == op_of[(c10d["name"], c10d["tid"], c10d["ts"])].id


def linked(path: Path) -> LinkedTrace:
    device = load_device_trace(path)
    return link_traces(host_trace_from_kineto(device), device, LinkOptions())


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_each_host_op_is_linked_to_its_own_event(path: Path) -> None:
    with quiet():
        trace = linked(path)
    _, matched = pairs(path)
    assert trace.report.unmatched_host_ops == 0
    for op, event in matched:
        joined = trace.matches[op.id].event
        assert (joined.name, joined.tid, joined.ts_us) == (event["name"], event["tid"], event["ts"])


def measured_span_us(path: Path) -> float:
    events = raw_host_events(path)
    return max(float(e["ts"]) + float(e["dur"]) for e in events) - float(events[0]["ts"])


@pytest.mark.parametrize("path", [SHAPES, NOSHAPES], ids=IDS[:2])
def test_a_single_process_profile_replays_as_measured(path: Path) -> None:
    with quiet():
        graph = convert_et_plus(as_et_plus(linked(path)), ConvertOptions(rank=0))
        rank = simulate([build_graph(graph.nodes, 0)]).ranks[0]
    assert rank.simulated_makespan_us == pytest.approx(measured_span_us(path), rel=0.01)
    assert rank.error_pct is not None and abs(rank.error_pct) < 1


def test_the_two_gloo_ranks_replay_together_as_measured() -> None:
    with quiet():
        graphs = [convert_et_plus(as_et_plus(linked(path)), ConvertOptions(rank=r)).nodes
                  for r, path in enumerate(RANKS)]  # fmt: skip
        agreement = agree([[r for r in map(record_of, nodes) if r is not None] for nodes in graphs])
        graphs = [list(patched(nodes, agreement.fills[r])) if agreement.fills.get(r) else nodes
                  for r, nodes in enumerate(graphs)]  # fmt: skip
        result = simulate([build_graph(nodes, r) for r, nodes in enumerate(graphs)])
    for rank, path in zip(result.ranks, RANKS):
        assert rank.simulated_makespan_us == pytest.approx(measured_span_us(path), rel=0.01)
        assert rank.error_pct is not None and abs(rank.error_pct) < 1
