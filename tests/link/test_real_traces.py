"""Linking the real public traces and our PyTorch 2.13 recordings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chakra.ingest import load_device_trace, load_host_trace
from chakra.link import EdgeKind, LinkOptions, link_traces
from chakra.link.et_plus import write_et_plus
from chakra.link.linked_trace import WindowChoice
from tests.conftest import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "data" / "pytorch213"


def link_pair(host: Path, device: Path, **options: object):
    return link_traces(load_host_trace(host), load_device_trace(device), LinkOptions(**options))


def test_simple_add(shared_traces: Path) -> None:
    hta = shared_traces / "hta"
    linked = link_pair(hta / "simple_add.host_et.json.gz", hta / "simple_add.kineto.json.gz")
    report = linked.report
    assert (report.host_ops, report.matched) == (36, {"external_id": 36})
    assert report.gpu_ops_linked == report.gpu_ops_total == 4
    assert {n.event.stream for n in linked.gpu_nodes} == {7}
    by_id = linked.host.op_by_id()
    syncs = [e for e in linked.edges if e.kind is EdgeKind.HOST_SYNC]
    assert len(syncs) == 5
    assert {e.via_api for e in syncs} == {"cudaDeviceSynchronize"}
    # no host op starts after the last two synchronize calls (at +19.69 s and +19.81 s):
    # their edges end at the thread's end (dst None); the others gate the next op
    assert [e.dst is None for e in syncs] == [False, False, False, True, True]
    gated = [by_id[e.dst].name for e in syncs[:3]]
    assert gated == ["aten::add", "[param|torch.add|0|0|0|measure|forward]", "aten::add"]
    assert {by_id[n.parent_id].name for n in linked.gpu_nodes} == {"aten::uniform_", "aten::add"}


def test_linear_joins_one_iteration_in_program_order(shared_traces: Path) -> None:
    param = shared_traces / "param"
    linked = link_pair(param / "linear.host_et.json.gz", param / "linear.kineto.json.gz")
    report = linked.report
    assert report.matched == {"program_order": 928} and report.unmatched_host_ops == 0
    assert report.rejected == {}
    assert report.gpu_coverage >= 0.99 and report.gpu_ops_linked > 200
    assert report.window is not None
    assert (report.window.choice, report.window.iteration, report.window.candidates) == (
        WindowChoice.HOST_SPAN,
        0,
        39,
    )
    assert report.window.describe().endswith("iteration 0 of 39 matching equally in program order")
    assert any("equally well" in note for note in report.notes)  # the guess is said
    other = link_pair(param / "linear.host_et.json.gz", param / "linear.kineto.json.gz",
                      iteration=3)  # fmt: skip
    assert other.report.window != report.window
    assert other.report.host_coverage == 1.0
    # host and GPU ops of one iteration: every GPU node launched inside the chosen window
    starts = [m.event.ts_us for m in linked.matches.values()]
    assert all(min(starts) <= n.launch_ts_us for n in linked.gpu_nodes)


def test_linear_program_order_agrees_with_name_alignment(shared_traces: Path) -> None:
    """Two independent joins (ids in program order; names aligned in time order) pick the
    same Kineto op for every host op of linear's first iteration."""
    from chakra.link.cpu_join import _join_by_alignment, kineto_cpu_events, linkable_host_ops

    param = shared_traces / "param"
    host = load_host_trace(param / "linear.host_et.json.gz")
    device = load_device_trace(param / "linear.kineto.json.gz")
    ordered = link_traces(host, device, LinkOptions()).matches
    aligned = _join_by_alignment(
        linkable_host_ops(host), kineto_cpu_events(device), LinkOptions(), None
    ).matches
    assert len(aligned) == len(ordered) == 928
    assert {h: id(m.event) for h, m in ordered.items()} == {
        h: id(event) for h, (event, _) in aligned.items()
    }


@pytest.mark.parametrize(
    ("host", "device"),
    [("single/host_et.json.gz", "single/kineto.json.gz"),
     ("gloo_2rank/rank0.host_et.json.gz", "gloo_2rank/rank0.kineto.json.gz"),
     ("gloo_2rank/rank1.host_et.json.gz", "gloo_2rank/rank1.kineto.json.gz")],
)  # fmt: skip
def test_pytorch_2_13_fixtures_join_by_record_function_id(host: str, device: str) -> None:
    linked = link_pair(FIXTURES / host, FIXTURES / device)
    assert linked.report.unmatched_host_ops == 0
    assert set(linked.report.matched) == {"record_function_id"}


def test_et_plus_is_reference_shaped_and_deterministic(shared_traces: Path, tmp_path: Path) -> None:
    hta = shared_traces / "hta"
    pair = (hta / "simple_add.host_et.json.gz", hta / "simple_add.kineto.json.gz")
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    write_et_plus(link_pair(*pair), first)
    write_et_plus(link_pair(*pair), second)
    assert first.read_bytes() == second.read_bytes()
    document = json.loads(first.read_text())
    assert {"schema", "pid", "time", "start_ts", "finish_ts", "nodes"} <= set(document)
    nodes = document["nodes"]
    ids = [n["id"] for n in nodes]
    assert len(ids) == len(set(ids)) == 38 + 4
    assert all(n["ctrl_deps"] in set(ids) for n in nodes)
    linked_host = [n for n in nodes if "ts" in n and "cat" not in n]
    assert len(linked_host) == 36
    for node in linked_host:
        assert {"inclusive_dur", "exclusive_dur", "inter_thread_dep"} <= set(node)
        assert 0 <= node["exclusive_dur"] <= node["inclusive_dur"]
    gpu = [n for n in nodes if "cat" in n]
    assert [n["stream"] for n in gpu] == [7, 7, 7, 7]
    for node in gpu:
        assert node["ph"] == "X" and node["inclusive_dur"] == node["exclusive_dur"] == node["dur"]
        assert {"inputs", "outputs", "attrs", "ctrl_deps"} <= set(node)
    waiting = [n for n in nodes if "sync_dep" in n]
    assert waiting and all(set(n["sync_dep"]) <= {g["id"] for g in gpu} for n in waiting)
    kinds = {d["kind"] for d in document["chakra_link"]["dependencies"]}
    assert kinds == {"launch", "stream_order", "host_sync"}
    first_dep = document["chakra_link"]["dependencies"][0]
    assert list(first_dep) == ["kind", "src", "dst", "via", "via_correlation", "via_ts",
                               "via_end", "via_host"]  # fmt: skip
    window = document["chakra_link"]["report"]["window"]  # the window in words, as printed
    assert window.startswith("span of the host ET's ops (") and window.endswith(" us)")
