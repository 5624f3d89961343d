"""The Perfetto timeline of a synthetic two-rank job, checked from the raw JSON: every track
properly nested (simulated and measured), processes and tracks named, and a flow for each
kind of dependency edge the job's graphs hold (read from the .et files)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from chakra.et import EtReader
from chakra.pipeline import RankFiles, run_pipeline
from chakra.simulate.run import simulate_files
from chakra.synth import SynthOptions, generate_job
from chakra.views.timeline import Slice, chrome_trace, nest
from tests.views.timeline_checks import flows, improperly_nested, names

#: a thread's track adds the name Kineto gave the thread it was recorded on (chakra_synth
#: names them "thread <tid> (<role>)"), unless none of its ops was recorded (the root's)
TRACK = re.compile(
    r"(thread \d+( · thread \d+ \(\w+\))?|(device \d+ )?stream \d+|no resource \d+"
    r"|critical path)"
)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], Path]:
    folder = tmp_path_factory.mktemp("timeline")
    summary = generate_job(SynthOptions(seed=3, ranks=2, ops_per_step=70), folder / "traces")
    ranks = [RankFiles(r.rank, r.host_et, r.kineto) for r in summary.ranks]
    result = run_pipeline(ranks, folder / "out", plot=False)
    return json.loads(Path(result.timeline).read_text())["traceEvents"], folder / "out"


def test_every_track_is_properly_nested(job: tuple[list[dict[str, Any]], Path]) -> None:
    events, _ = job
    processes = names(events, "process_name")
    assert sorted(processes.values()) == [
        "rank 0 (measured)", "rank 0 (simulated)", "rank 1 (measured)", "rank 1 (simulated)",
    ]  # fmt: skip
    for pid in processes:  # both kinds of process have slices, all nested
        assert any(e["ph"] == "X" and e["pid"] == pid for e in events)
    assert improperly_nested(events) == []


def test_tracks_are_named(job: tuple[list[dict[str, Any]], Path]) -> None:
    events, _ = job
    tracks = names(events, "thread_name")
    assert all(TRACK.fullmatch(name) for name in tracks.values()), set(tracks.values())
    used = {(e["pid"], e["tid"]) for e in events if e["ph"] in "Xsf"}
    assert used <= tracks.keys()
    assert "critical path" in tracks.values()
    named = {name.split(" · ")[0] for name in tracks.values() if " · " in name}
    assert named == {"thread 1", "thread 2"}  # the main and autograd threads, on both ranks
    assert any(name.startswith("stream ") for name in tracks.values())
    # one op is one slice: a step appears once per step and process, not once per segment
    steps = [e for e in events if e["ph"] == "X" and e["name"].startswith("ProfilerStep")
             and e["cat"] == "op"]  # fmt: skip
    assert 0 < len(steps) <= 4 * 2


def _edge_kinds(et_file: Path) -> set[str]:
    """The kinds of the .et's direct dependencies between two resources."""
    where: dict[int, tuple] = {}
    deps: dict[int, list[int]] = {}
    comm = False
    with EtReader(et_file) as reader:
        for node in reader:
            attrs = {a.name: a for a in node.attr}
            cpu = attrs["is_cpu_op"].bool_val if "is_cpu_op" in attrs else True
            if "runs_on_host" in attrs or (cpu and "tid" in attrs):
                where[node.id] = ("thread", attrs["tid"].int64_val)
            elif not cpu:
                where[node.id] = ("stream", attrs["stream"].int64_val if "stream" in attrs else 0)
            deps[node.id] = list(node.data_deps)
            comm |= "pg_name" in attrs
    kinds = {"collective"} if comm else set()
    for node, before in deps.items():
        for dep in before:
            if node not in where or dep not in where:
                continue
            (a, x), (b, y) = where[dep], where[node]
            if a != b:
                kinds.add("launch" if a == "thread" else "host sync")
            elif a == "stream":
                kinds.add("stream order" if x == y else "event wait")
            elif x != y:
                kinds.add("inter-thread")
    return kinds


def test_flows_for_every_edge_kind(job: tuple[list[dict[str, Any]], Path]) -> None:
    events, out = job
    expected = _edge_kinds(out / "workload.0.et") | _edge_kinds(out / "workload.1.et")
    assert {"launch", "stream order", "collective"} <= expected
    tracks = names(events, "thread_name")
    seen = set()
    for start, finish in flows(events).values():
        assert start["name"] == finish["name"]
        kind = start["name"]
        seen.add(kind)
        source, target = tracks[start["pid"], start["tid"]], tracks[finish["pid"], finish["tid"]]
        if kind == "collective":
            assert start["pid"] != finish["pid"]
            continue
        assert start["pid"] == finish["pid"]
        assert source.startswith("thread") == (kind in ("launch", "inter-thread"))
        assert target.startswith("thread") == (kind in ("host sync", "inter-thread"))
        assert (source == target) == (kind == "stream order")
        for end in (start, finish):  # bound to a slice of its track
            assert any(e["ph"] == "X" and (e["pid"], e["tid"]) == (end["pid"], end["tid"])
                       and e["ts"] <= end["ts"] <= e["ts"] + e["dur"] for e in events)  # fmt: skip
    assert expected <= seen


def test_the_checker_finds_a_shifted_slice(job: tuple[list[dict[str, Any]], Path]) -> None:
    events, _ = job
    broken = [dict(e) for e in events]
    step = next(e for e in broken if e["ph"] == "X" and e["name"].startswith("ProfilerStep"))
    child = next(e for e in broken if e["ph"] == "X" and (e["pid"], e["tid"]) ==
                 (step["pid"], step["tid"]) and step["ts"] < e["ts"] and e is not step
                 and e["ts"] + e["dur"] < step["ts"] + step["dur"])  # fmt: skip
    child["dur"] = step["ts"] + step["dur"] - child["ts"] + 1.0  # now ends after the step
    assert improperly_nested(broken) == [child]


def test_nest_moves_rounded_starts_and_cuts_the_rest() -> None:
    # a stream: the second kernel's whole-µs start lies 0.4 µs inside the first
    first, second = Slice(0, 0, 5_300, 0), Slice(0, 5_000, 7_000, 1)
    assert nest([first, second]) == [first, Slice(0, 5_300, 7_000, 1, moved_ns=300)]
    # a child that overruns its parent by more than the rounding is cut at its end
    parent, child = Slice(0, 0, 10_000, 0), Slice(0, 2_000, 12_000, 1)
    assert nest([parent, child]) == [parent, Slice(0, 2_000, 10_000, 1, cut_ns=2_000)]


def test_segments_show_every_node(job: tuple[list[dict[str, Any]], Path]) -> None:
    _, out = job
    engine = simulate_files([out / "workload.0.et", out / "workload.1.et"])
    events = chrome_trace(engine, segments=True)["traceEvents"]
    ops = [e for e in events if e["ph"] == "X" and e["cat"] == "op"]
    assert len(ops) == sum(len(graph.ids) for graph in engine.graphs)
    assert improperly_nested(events) == []
    assert names(events, "process_name") == {0: "rank 0 (simulated)", 1: "rank 1 (simulated)"}


def test_op_slices_carry_stream_shapes_durations_and_degrees(
    job: tuple[list[dict[str, Any]], Path],
) -> None:
    """Read back from the pipeline's timeline.json: the simulated process's op slices say
    their stream, input shapes, simulated and measured µs and in/out degree; the measured
    process's say only which node they are."""
    events, out = job
    processes = names(events, "process_name")
    tracks = names(events, "thread_name")
    engine = simulate_files([out / "workload.0.et", out / "workload.1.et"])
    degrees = {}
    for graph in engine.graphs:
        for i, node_id in enumerate(graph.ids):
            ins = graph.pred_start[i + 1] - graph.pred_start[i]
            degrees[graph.rank, node_id] = (ins, graph.succ_start[i + 1] - graph.succ_start[i])
    ops = [e for e in events if e["ph"] == "X" and e["cat"] == "op"]
    simulated = [e for e in ops if processes[e["pid"]].endswith("(simulated)")]
    for event in simulated:
        args = event["args"]
        assert (args["in"], args["out"]) == degrees[event["pid"], args["node_id"]], event
        assert args["sim_us"] >= 0 and args["meas_us"] >= 0
        track = tracks[event["pid"], event["tid"]]
        if not track.startswith("stream "):
            assert "stream" not in args  # a host op: its track names its thread
            continue
        assert args["stream"] == int(track.split()[-1]), event
        if not {"cut_ns", "moved_ns"} & args.keys():  # a kernel's slice is its time
            assert args["sim_us"] == pytest.approx(event["dur"], abs=0.002), event
    shaped = [e["args"]["shapes"] for e in simulated if "shapes" in e["args"]]
    assert shaped and all(isinstance(json.loads(text), list) for text in shaped)
    assert any("stream" in e["args"] and "shapes" in e["args"] for e in simulated)
    assert any(e["args"]["meas_us"] > 0 for e in simulated)
    lean = {"node_id", "segment_ids", "cut_ns", "moved_ns"}
    measured = [e for e in ops if processes[e["pid"]].endswith("(measured)")]
    assert measured and all(e["args"].keys() <= lean for e in measured)
