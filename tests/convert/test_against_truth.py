"""Converting synthetic traces gives the ground truth's dependencies, types and sizes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from chakra.convert import ConvertOptions, convert_et_plus, load_et_plus
from chakra.et import NodeType, get_bool_attr, get_int_attr, get_str_attr
from chakra.et.graph_checks import ValidationOptions, validate_nodes
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
    legacy = "legacy_1_0_1" in vintages
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

        successors: dict[int, list[int]] = {}
        for n in graph.nodes:
            for dep in n.data_deps:
                successors.setdefault(dep, []).append(n.id)

        def reaches(src: int, dst: int, successors: dict = successors) -> bool:
            seen, stack = {src}, [src]
            while stack:
                for nxt in successors.get(stack.pop(), ()):
                    if nxt == dst:
                        return True
                    if nxt not in seen:
                        seen.add(nxt)
                        stack.append(nxt)
            return False

        for edge in truth["edges"]:
            src, dst = node_id(edge["src"]), node_id(edge["dst"])
            if dst is None:  # a final synchronize: nothing recorded follows it
                continue
            assert reaches(src, dst), edge
        # no edge contradicts the measured times: each source ended before its target began
        for n in graph.nodes:
            for dep in n.data_deps:
                source = nodes[dep]
                if source.start_time_micros and n.start_time_micros:
                    end = source.start_time_micros + source.duration_micros
                    assert end <= n.start_time_micros + 1, (source.name, n.name)
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
            # ASTRA-sim group ids: PyTorch's group number + 1 (ASTRA-sim reserves 0)
            assert get_str_attr(node, "pg_name") == str(int(expected["pg_name"]) + 1)
            assert get_bool_attr(node, "is_cpu_op") is False
            if expected["kind"] == "send_recv":
                assert node.type in (NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)
                sender, receiver = expected["ranks"]  # the truth lists the sender first
                assert (node.type == NodeType.COMM_SEND_NODE) == (rank.rank == sender)
                ends = (get_int_attr(node, "comm_src"), get_int_attr(node, "comm_dst"))
                # 1.0.1 traces name no group members: one rank alone cannot know its peer
                # (the pipeline fills the ends from both ranks: tests/ranks)
                assert ends == ((None, None) if legacy else (sender, receiver))
            else:
                assert get_int_attr(node, "comm_type") == COMM_TYPES[expected["kind"]]
        assert graph.report.cycles_broken == [] and graph.report.dropped_edges == {}
        report = validate_nodes(graph.nodes, ValidationOptions(require_streams=True,
                                                               astra_sim=not legacy))  # fmt: skip
        assert report.ok, report.problems[:3]


def test_gpu_nodes_carry_their_stream_and_cpu_nodes_none(tmp_path: Path) -> None:
    summary = generate_job(SynthOptions(seed=1, ranks=1, ops_per_step=70), tmp_path)
    linked, graph = convert_rank(tmp_path, summary.ranks[0])
    streams = Counter(get_int_attr(n, "stream") for n in graph.nodes
                      if not get_bool_attr(n, "is_cpu_op", True))  # fmt: skip
    assert set(streams) == {n.event.stream for n in linked.gpu_nodes}
    assert all(get_int_attr(n, "stream") is None for n in graph.nodes
               if get_bool_attr(n, "is_cpu_op", True))  # fmt: skip


@pytest.mark.parametrize(("ranks", "whole_us"), [(1, True), (2, True), (2, False)])
def test_every_op_replays_at_its_measured_time(tmp_path: Path, ranks: int, whole_us: bool) -> None:
    """Host ops split at children and runtime calls, delay nodes for unexplained waits,
    fractional durations kept in ``duration_ns``: every op's simulated start and end equal
    the truth within 1 us (the measured starts in the .et are whole microseconds)."""
    from chakra.simulate import SimOptions, build_graph, simulate

    options = SynthOptions(seed=5, ranks=ranks, steps=2, ops_per_step=70,
                           integer_timestamps=whole_us)  # fmt: skip
    summary = generate_job(options, tmp_path)
    converted = [convert_rank(tmp_path, rank) for rank in summary.ranks]
    graphs = [build_graph(g.nodes, r) for r, (_, g) in enumerate(converted)]
    replay = simulate(graphs, SimOptions(explain=False))
    for r, rank in enumerate(summary.ranks):
        truth = load_json(rank.truth)
        linked, graph = converted[r]
        index = {node_id: i for i, node_id in enumerate(replay.graphs[r].ids)}
        gpu_id = {n.event.correlation: n.node_id for n in linked.gpu_nodes}
        origin = min(s for s in replay.graphs[r].measured_start_us if s >= 0)
        offset = min(replay.start[r])
        checked = 0
        # a host op ends when the last node of its subtree (its segments, child ops and
        # their segments) ends; GPU and delay nodes are not part of it
        host_children: dict[int, list[int]] = {}
        for node in graph.nodes:
            cpu = get_bool_attr(node, "is_cpu_op") and get_int_attr(node, "delay_before") is None
            if cpu and node.ctrl_deps:
                host_children.setdefault(node.ctrl_deps[0], []).append(node.id)

        def subtree(root: int, host_children: dict = host_children) -> list[int]:
            found, stack = [root], [root]
            while stack:
                for child in host_children.get(stack.pop(), ()):
                    found.append(child)
                    stack.append(child)
            return found

        for op in [*truth["host_ops"], *truth["gpu_ops"]]:
            node = op["host_id"] if "host_id" in op else gpu_id.get(op["correlation"])
            if node not in index:
                continue
            start = replay.start[r][index[node]] - offset
            members = subtree(node) if "host_id" in op else [node]
            end = max(replay.end[r][index[m]] for m in members) - offset
            assert abs(start - (op["ts_us"] - origin)) < 1, op
            assert abs(end - (op["ts_us"] + op["dur_us"] - origin)) < 1, op
            checked += 1
        assert checked == len(truth["gpu_ops"]) + sum(1 for o in truth["host_ops"] if o["host_id"])
        result = replay.ranks[r]
        assert result.measured_makespan_us is not None
        assert abs(result.simulated_makespan_us - result.measured_makespan_us) < 1
