"""Converting synthetic traces gives the ground truth's dependencies, types and sizes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from chakra.convert import ConvertOptions, convert_et_plus, load_et_plus
from chakra.et import NodeType, get_bool_attr, get_int_attr, get_str_attr
from chakra.et.validate import ValidationOptions, validate_nodes
from chakra.ingest import load_device_trace, load_host_trace
from chakra.link import LinkOptions, link_traces
from chakra.link.et_plus import write_et_plus
from chakra.synth import SynthOptions, generate_job
from chakra.synth.options import options_with_vintages
from tests.synth.conftest import load_json

COMM_TYPES = {"all_reduce": 0, "all_gather": 2, "broadcast": 5, "all_to_all": 6,
              "reduce_scatter": 7}  # fmt: skip


def convert_rank(folder: Path, rank: Any, gaps: bool = True):
    linked = link_traces(load_host_trace(rank.host_et), load_device_trace(rank.kineto),
                         LinkOptions())  # fmt: skip
    et_plus = folder / f"rank{rank.rank}.et_plus.json"
    write_et_plus(linked, et_plus)
    return linked, convert_et_plus(load_et_plus(et_plus), ConvertOptions(gaps=gaps))


@pytest.mark.parametrize("vintages", [(), ("legacy_1_0_1",), ("no_rf_id", "no_flows")],
                         ids=lambda v: "+".join(v) or "modern")  # fmt: skip
def test_graph_holds_every_true_dependency_and_no_other(tmp_path: Path, vintages: tuple) -> None:
    options = options_with_vintages(SynthOptions(seed=6, ranks=2, ops_per_step=70), vintages)
    summary = generate_job(options, tmp_path)
    job = load_json(summary.job_truth)
    for rank in summary.ranks:
        truth = load_json(rank.truth)
        linked, graph = convert_rank(tmp_path, rank)
        nodes = {n.id: n for n in graph.nodes}
        gpu_id = {n.event.correlation: n.node_id for n in linked.gpu_nodes}
        sync_dst = {e.via_correlation: e.dst for e in linked.edges if e.kind.value == "host_sync"}

        def node_id(ref: str, gpu_id: dict = gpu_id, sync_dst: dict = sync_dst) -> Any:
            kind, value = ref.split(":")
            if kind == "host":
                return int(value)
            return gpu_id[int(value)] if kind == "gpu" else sync_dst.get(int(value))

        truth_pairs = set()
        for edge in truth["edges"]:
            src, dst = node_id(edge["src"]), node_id(edge["dst"])
            if dst is None:  # a final synchronize: nothing recorded follows it
                continue
            assert src in nodes[dst].data_deps, edge
            truth_pairs.add((src, dst))
        # every dependency is a true one, the thread's program order, or an idle gap
        chain_like = {"cpu_chain", "thread_start"}
        extra = {
            (src, node.id) for node in graph.nodes for src in node.data_deps
            if (src, node.id) not in truth_pairs
        }  # fmt: skip
        assert len(extra) == sum(graph.report.edges[k] for k in chain_like)
        for src, dst in extra:
            assert get_bool_attr(nodes[src], "is_cpu_op") and get_bool_attr(nodes[dst], "is_cpu_op")
        # collectives typed and sized as generated
        by_correlation = {c["gpu_correlation_by_rank"][str(rank.rank)]: c
                          for c in job["collectives"]
                          if str(rank.rank) in c["gpu_correlation_by_rank"]}  # fmt: skip
        comm = [n for n in graph.nodes if n.type in (NodeType.COMM_COLL_NODE,
                NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)]  # fmt: skip
        assert len(comm) == len(by_correlation)
        correlation_of = {v: k for k, v in gpu_id.items()}
        for node in comm:
            expected = by_correlation[correlation_of[node.id]]
            assert get_int_attr(node, "comm_size") == expected["bytes"]
            assert get_str_attr(node, "pg_name") == expected["pg_name"]
            assert get_bool_attr(node, "is_cpu_op") is False
            if expected["kind"] == "send_recv":
                assert node.type in (NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)
            else:
                assert get_int_attr(node, "comm_type") == COMM_TYPES[expected["kind"]]
        assert graph.report.cycles_broken == [] and graph.report.dropped_edges == {}
        report = validate_nodes(graph.nodes, ValidationOptions(require_streams=True))
        assert report.ok, report.problems[:3]


def test_gpu_nodes_carry_their_stream_and_cpu_nodes_none(tmp_path: Path) -> None:
    summary = generate_job(SynthOptions(seed=1, ranks=1, ops_per_step=70), tmp_path)
    linked, graph = convert_rank(tmp_path, summary.ranks[0])
    streams = Counter(get_int_attr(n, "stream") for n in graph.nodes
                      if not get_bool_attr(n, "is_cpu_op", True))  # fmt: skip
    assert set(streams) == {n.event.stream for n in linked.gpu_nodes}
    assert all(get_int_attr(n, "stream") is None for n in graph.nodes
               if get_bool_attr(n, "is_cpu_op", True))  # fmt: skip


def test_idle_gaps_are_nodes_unless_disabled(tmp_path: Path) -> None:
    summary = generate_job(SynthOptions(seed=1, ranks=1, ops_per_step=70), tmp_path)
    linked, with_gaps = convert_rank(tmp_path, summary.ranks[0])
    _, without = convert_rank(tmp_path, summary.ranks[0], gaps=False)
    idle = [n for n in with_gaps.nodes if n.name == "[idle]"]
    assert len(idle) == with_gaps.report.idle_nodes > 0
    assert without.report.idle_nodes == 0
    assert len(with_gaps.nodes) - len(without.nodes) == len(idle)
    gaps = {op: round(gap) for op, gap in linked.idle_gap_us.items() if gap > 0}
    assert sorted(n.duration_micros for n in idle) == sorted(gaps.values())
    # each idle node sits right before the op whose gap it replays
    for node in idle:
        before = get_int_attr(node, "idle_before")
        assert node.id in {n.id: n for n in with_gaps.nodes}[before].data_deps
