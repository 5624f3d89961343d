"""Linking synthetic traces reproduces their ground truth exactly, for every vintage."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from chakra.ingest import load_device_trace, load_host_trace
from chakra.link import LinkedTrace, LinkOptions, link_traces
from chakra.synth import SynthOptions, generate_job
from chakra.synth.options import options_with_vintages
from tests.synth.conftest import load_json

VINTAGES = [
    (), ("no_rf_id",), ("no_flows",), ("legacy_1_0_1",), ("no_rf_id", "no_flows"),
    ("tied_zero_ops",), ("legacy_1_0_1", "tied_zero_ops"),
    ("no_rf_id", "no_flows", "tied_zero_ops"),
]  # fmt: skip


def refs(linked: LinkedTrace) -> set[tuple[str, str, str]]:
    """Our edges in the truth's vocabulary: host:<id>, gpu:<correlation>, runtime:<corr>."""
    gpu = {n.node_id: f"gpu:{n.event.correlation}" for n in linked.gpu_nodes}

    def ref(node_id: Any) -> str:
        return gpu.get(node_id, f"host:{node_id}")

    out = set()
    for edge in linked.edges:
        dst = f"runtime:{edge.via_correlation}" if edge.kind.value == "host_sync" else ref(edge.dst)
        out.add((edge.kind.value, ref(edge.src), dst))
    return out


def check_rank(truth: dict[str, Any], linked: LinkedTrace) -> None:
    # every host op the host ET holds is matched with the very Kineto op that recorded it
    recorded = {op["host_id"]: op for op in truth["host_ops"] if op["host_id"] is not None}
    assert {h: m.event.external_id for h, m in linked.matches.items()} == {
        h: op["external_id"] for h, op in recorded.items()
    }
    # the verified counts are the truth's
    report = linked.report
    assert sum(report.matched.values()) == len(linked.matches) == report.host_ops
    assert report.rejected == {} and report.contradictions == {}
    parented = [g for g in truth["gpu_ops"] if g["parent_host_id"] is not None]
    assert report.gpu_ops_linked == len(parented)
    present = {f"gpu:{n.event.correlation}" for n in linked.gpu_nodes}
    parents = {f"gpu:{g['correlation']}": g for g in truth["gpu_ops"]}
    # every GPU op whose launching host op is in the host ET is linked, to the same parent
    expected = {ref for ref, g in parents.items() if g["parent_host_id"] is not None}
    assert expected <= present
    for node in linked.gpu_nodes:
        true_op = parents[f"gpu:{node.event.correlation}"]
        assert node.parent_id == true_op["parent_host_id"]
        assert node.event.stream == true_op["stream"]
    ours = refs(linked)
    true_edges = {
        (e["kind"], e["src"], e["dst"]) for e in truth["edges"]
        if all(not r.startswith("gpu:") or r in present for r in (e["src"], e["dst"]))
    }  # fmt: skip
    assert ours - true_edges == set(), "false edges"
    assert true_edges - ours == set(), "missing edges"


@pytest.mark.parametrize("vintages", VINTAGES, ids=lambda v: "+".join(v) or "modern")
@pytest.mark.parametrize("host_step", [None, 1])
def test_link_matches_ground_truth(
    tmp_path: Path, vintages: tuple[str, ...], host_step: Any
) -> None:
    options = SynthOptions(seed=5, ranks=2, steps=3, ops_per_step=70, host_step=host_step)
    summary = generate_job(options_with_vintages(options, vintages), tmp_path)
    for rank in summary.ranks:
        linked = link_traces(
            load_host_trace(rank.host_et), load_device_trace(rank.kineto), LinkOptions()
        )
        report = linked.report
        assert report.unmatched_host_ops == 0
        assert report.gpu_ops_orphaned == {}
        by_record_function_id = not {"no_rf_id", "legacy_1_0_1"} & set(vintages)
        expected_strategy = "record_function_id" if by_record_function_id else "program_order"
        assert set(report.matched) == {expected_strategy}
        if host_step is None:
            assert report.gpu_ops_outside_window == 0
        check_rank(load_json(rank.truth), linked)


def test_edge_counts_of_a_modern_rank(tmp_path: Path) -> None:
    summary = generate_job(SynthOptions(seed=2, ranks=2, steps=2, ops_per_step=70), tmp_path)
    rank = summary.ranks[1]
    truth = load_json(rank.truth)
    linked = link_traces(load_host_trace(rank.host_et), load_device_trace(rank.kineto),
                         LinkOptions())  # fmt: skip
    assert linked.report.edges == dict(sorted(Counter(e["kind"] for e in truth["edges"]).items()))
    assert linked.report.gpu_ops_linked == len(truth["gpu_ops"]) == rank.gpu_ops


def test_missing_launch_events_fall_back_to_external_id_or_orphan(tmp_path: Path) -> None:
    """Real traces lose launch events (a launching thread outside the profiled ones): the
    GPU op is attached by External id when its CPU op is known, else kept as an orphan."""
    summary = generate_job(SynthOptions(seed=3, ranks=1, steps=1, ops_per_step=70), tmp_path)
    rank = summary.ranks[0]
    document = json.loads(rank.kineto.read_text())
    kernels = [e for e in document["traceEvents"] if e.get("cat") == "kernel"]
    no_launch = {k["args"]["correlation"] for k in kernels[:3]}
    kernels[2]["args"].pop("External id")  # and this one cannot be placed at all
    document["traceEvents"] = [
        e for e in document["traceEvents"]
        if not (e.get("cat") == "cuda_runtime" and e["args"].get("correlation") in no_launch)
    ]  # fmt: skip
    kineto = tmp_path / "damaged.kineto.json"
    kineto.write_text(json.dumps(document))
    linked = link_traces(load_host_trace(rank.host_et), load_device_trace(kineto), LinkOptions())
    truth = {g["correlation"]: g for g in load_json(rank.truth)["gpu_ops"]}
    nodes = {n.event.correlation: n for n in linked.gpu_nodes}
    first, second, third = (nodes[k["args"]["correlation"]] for k in kernels[:3])
    for node in (first, second):
        assert node.linked_by == "external_id"
        assert node.parent_id == truth[node.event.correlation]["parent_host_id"]
    assert (third.parent_id, third.orphan_reason) == (None, "no launch event in the trace")
    assert linked.report.gpu_ops_linked_by_external_id == 2
    assert linked.report.gpu_ops_orphaned == {"no launch event in the trace": 1}
    # the orphan keeps its place in its stream's order
    stream_edges = {(e.src, e.dst) for e in linked.edges if e.kind.value == "stream_order"}
    assert any(third.node_id in pair for pair in stream_edges)


def test_et_plus_nccl_nodes_carry_collective_metadata(tmp_path: Path) -> None:
    from chakra.link.et_plus import write_et_plus

    summary = generate_job(SynthOptions(seed=4, ranks=2, steps=1, ops_per_step=70), tmp_path)
    rank = summary.ranks[0]
    linked = link_traces(load_host_trace(rank.host_et), load_device_trace(rank.kineto),
                         LinkOptions())  # fmt: skip
    out = tmp_path / "et_plus.json"
    write_et_plus(linked, out)
    nodes = json.loads(out.read_text())["nodes"]
    truth = {g["correlation"]: g for g in load_json(rank.truth)["gpu_ops"]}
    host_names = {n["id"]: n["name"] for n in nodes if "cat" not in n}
    nccl = [n for n in nodes if n.get("cat") == "kernel" and "nccl" in n["name"].lower()]
    assert nccl
    for node in nccl:
        expected = truth[node["correlation"]]["collective"]
        assert node["pg_name"] == expected["pg_name"]
        assert node["collective"]["name"] and node["collective"]["group_size"] >= 1
        assert host_names[node["ctrl_deps"]].startswith("nccl:")  # attached to the nccl:* op


def test_tied_zero_length_ops_keep_program_order(tmp_path: Path) -> None:
    """The hazard is really in the traces (0 us ops starting with their next sibling), and
    time-then-duration order would put the sibling first, which program order does not."""
    from chakra.link.nesting import program_order_key

    options = options_with_vintages(
        SynthOptions(seed=7, ranks=1, steps=1, ops_per_step=70), ["legacy_1_0_1", "tied_zero_ops"]
    )
    rank = generate_job(options, tmp_path).ranks[0]
    events = list(load_device_trace(rank.kineto).cpu_ops)
    zero = [e for e in events if e.dur_us == 0 and e.name == "aten::lift_fresh"]
    assert len(zero) >= 3
    same_start = {(e.tid, e.ts_us): e for e in events if e.dur_us > 0}
    tied = [(z, same_start[(z.tid, z.ts_us)]) for z in zero if (z.tid, z.ts_us) in same_start]
    assert len(tied) == len(zero)
    for first, sibling in tied:
        assert first.external_id < sibling.external_id  # entered first
        assert (first.ts_us, -first.dur_us) > (sibling.ts_us, -sibling.dur_us)
        assert program_order_key(first) < program_order_key(sibling)
    linked = link_traces(load_host_trace(rank.host_et), load_device_trace(rank.kineto),
                         LinkOptions())  # fmt: skip
    assert linked.report.matched == {"program_order": linked.report.host_ops}
