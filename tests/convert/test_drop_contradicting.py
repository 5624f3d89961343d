"""The converter's drops of dependencies the measured times contradict, counted by kind,
reported, recorded in the ``.et`` and reported by ``chakra_validate`` from it."""

from __future__ import annotations

import json
from pathlib import Path

from chakra.convert import convert_file
from chakra.convert.contradictions import contradiction_warning, drop_contradicting
from chakra.convert.graph import Graph
from chakra.et.graph_checks import ValidationOptions
from chakra.ingest import load_device_trace, load_host_trace
from chakra.ingest.et_plus_model import EtPlusNode
from chakra.link import LinkOptions, link_traces, write_et_plus
from chakra.synth import SynthOptions, generate_job
from chakra.tools.validate_files import check_file, format_text


def gpu(node_id: int, ts: float, dur: float) -> EtPlusNode:
    return EtPlusNode(id=node_id, name=f"k{node_id}", cat="kernel", ts=ts, dur=dur)


def host(node_id: int, ts: float, dur: float) -> EtPlusNode:
    return EtPlusNode(id=node_id, name=f"op{node_id}", ts=ts, dur=dur)


def test_each_dropped_edge_is_counted_under_the_kind_it_was_added_with() -> None:
    """Bulk kinds are told by their ends (host -> host: the thread's chain, host -> GPU: a
    launch, GPU -> GPU: stream order); every other kind is the one recorded when added,
    even between the same kinds of ends (an event wait is GPU -> GPU)."""
    nodes = [host(1, 0, 10), host(2, 5, 10), gpu(3, 4, 10), gpu(4, 8, 10), gpu(5, 9, 1),
             host(6, 12, 1), host(7, 30, 1)]  # fmt: skip
    by_id = {n.id: n for n in nodes}
    graph = Graph(by_id)
    edges = [(1, 2, "cpu_chain"), (1, 3, "launch"), (3, 4, "stream_order"),
             (3, 5, "event_wait"), (4, 6, "host_sync"), (2, 6, "inter_thread"),
             (6, 7, "cpu_chain")]  # fmt: skip
    for src, dst, kind in edges:
        graph.add(src, dst, kind)
    start = {n.id: n.ts for n in nodes}
    end = {n.id: n.end for n in nodes}
    dropped = drop_contradicting(graph, start, end, by_id)
    assert dict(dropped) == {"cpu_chain": 1, "launch": 1, "stream_order": 1, "event_wait": 1,
                             "host_sync": 1, "inter_thread": 1}  # fmt: skip
    assert graph.deps[7] == [6]  # the one that holds is kept


def test_an_edge_added_twice_counts_under_its_first_kind() -> None:
    nodes = [host(1, 0, 10), host(2, 5, 10)]
    graph = Graph({n.id: n for n in nodes})
    graph.add(1, 2, "cpu_chain")
    graph.add(1, 2, "inter_thread")  # already there: not added, not recorded
    dropped = drop_contradicting(graph, {1: 0, 2: 5}, {1: 10, 2: 15}, {n.id: n for n in nodes})
    assert dict(dropped) == {"cpu_chain": 1}


def test_the_warning_says_the_total_then_the_linker_and_the_converter() -> None:
    assert contradiction_warning({}, {}) is None
    line = contradiction_warning({"host_sync": 2}, {"event_wait": 1})
    assert line is not None
    assert "not in the graph: event_wait 1, host_sync 2 " in line
    assert "left out by the linker, in its report: host_sync 2;" in line
    assert "their target having started before their source ended: event_wait 1)" in line


def test_what_the_converter_drops_itself_is_reported_recorded_and_validated(
    tmp_path: Path,
) -> None:
    """An ET+ whose evidence the linker did not check (here an event wait added by hand
    from a GPU op to one that started before it ended): the converter drops it, counts it
    under its kind, warns, and records it in the .et, where chakra_validate finds it. The
    link report did not count it: the tools then disagree, which is what the agreement
    test (test_contradiction_counts) would catch."""
    options = SynthOptions(seed=3, ranks=1, steps=1, ops_per_step=70)
    rank = generate_job(options, tmp_path / "job").ranks[0]
    linked = link_traces(load_host_trace(rank.host_et), load_device_trace(rank.kineto),
                         LinkOptions())  # fmt: skip
    et_plus = tmp_path / "trace.et_plus.json"
    write_et_plus(linked, et_plus)
    document = json.loads(et_plus.read_text())
    kernels = sorted((n for n in document["nodes"] if n.get("cat") == "kernel"),
                     key=lambda n: n["ts"])  # fmt: skip
    early, late = kernels[0], kernels[-1]
    document["chakra_link"]["dependencies"].append(
        {"kind": "event_wait", "src": late["id"], "dst": early["id"]}
    )
    et_plus.write_text(json.dumps(document))
    report = convert_file(et_plus, tmp_path / "trace.0.et")
    assert report.contradicting_edges_dropped == 1
    assert report.contradicting_edges_dropped_by_kind == {"event_wait": 1}
    assert report.contradictions == {"event_wait": 1}
    (warning,) = [w for w in report.warnings if "contradicting the measured times" in w]
    assert "dropped here, their target having started before" in warning
    result = check_file(tmp_path / "trace.0.et", ValidationOptions(astra_sim=False))
    assert result.ok and result.contradictions == {"event_wait": 1}
    lines = format_text([result], [])
    assert lines[1] == ("  contradictions (measured times refute them; not in the graph): "
                        "event_wait 1")  # fmt: skip
