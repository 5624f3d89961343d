"""Named regression tests on Chakra ET (``.et``) inputs: what chakra_validate accepts must
simulate, and chakra_sim's errors name the file (see ``test_regressions.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chakra.et import NodeType
from tests.fuzz import handmade
from tests.fuzz.checks import (
    case,
    check,
    convert,
    host_link,
    out_dir,
    sim,
    timeline_of,
    validate,
)
from tests.fuzz.et_mutators import field_bytes, field_varint, frame, split_messages
from tests.fuzz.harness import Case, Verdict, describe
from tests.fuzz.targets import TEXT_WORKLOADS


def accepted_then_simulated(out: Path, graph: Path, *options: str) -> None:
    """chakra_validate and chakra_sim keep the promise, and agree: a graph that
    chakra_validate accepts simulates (status 0)."""
    accepted, _ = check(validate(out, graph))
    simulated, outcome = check(sim(out, graph, options=options))
    if accepted.returncode == 0:
        assert simulated.returncode == 0, describe(simulated, outcome)


@pytest.mark.parametrize(
    "node_id",
    [
        case(2**63, id="2^63", fixed=True),
        case(2**64 - 1, id="2^64-1", fixed=True),
    ],
)  # fmt: skip
@pytest.mark.parametrize("resources", ["threads-streams", "astra-sim"])
def test_et_node_id_beyond_int64(
    base: dict[str, Path], tmp_path: Path, node_id: int, resources: str
) -> None:
    out = out_dir(tmp_path)
    graph = handmade.edit_et(base["et"], tmp_path / "big_id.et",
                             lambda _, nodes: handmade.renumber(nodes, 5, node_id))  # fmt: skip
    accepted_then_simulated(out, graph, "--resources", resources)


# --- a string tid -----------------------------------------------------------------------


def _string_tid_et(base: dict[str, Path], tmp_path: Path) -> Path:
    def edit(_: Any, nodes: list[Any]) -> None:
        for attr in nodes[5].attr:
            if attr.name == "tid":
                attr.string_val = "abc"

    return handmade.edit_et(base["et"], tmp_path / "string_tid.et", edit)


def _string_tid_host(base: dict[str, Path], tmp_path: Path) -> Path:
    document = handmade.read_json(base["host"])
    for attr in document["nodes"][5]["attrs"]:
        if attr["name"] == "tid":
            attr["value"] = "abc"
    return handmade.write_json(tmp_path / "string_tid.json", document)


@pytest.mark.parametrize(
    "where",
    [
        case("et-sim", fixed=True),
        case("host-trace_link", fixed=True),
        case("host-converter", fixed=True),
    ],
)  # fmt: skip
def test_string_tid_attribute(base: dict[str, Path], tmp_path: Path, where: str) -> None:
    out = out_dir(tmp_path)
    if where == "et-sim":
        check(sim(out, _string_tid_et(base, tmp_path)))
    elif where == "host-trace_link":
        check(host_link(_string_tid_host(base, tmp_path), base["kineto"], out))
    else:
        check(convert(_string_tid_host(base, tmp_path), out, "--rank", "0"))


def _with_attr(base: dict[str, Path], tmp_path: Path, name: str, value: bytes) -> Path:
    """The seed ``.et`` with attribute ``name`` (wire bytes of its value member) appended to
    node 6: a reader takes the last of repeated attributes."""
    bodies = split_messages(handmade.read_bytes(base["et"]))
    bodies[6] += field_bytes(10, field_bytes(1, name.encode()) + value)
    path = tmp_path / f"attr_{name}.et"
    path.write_bytes(frame(bodies))
    return path


@pytest.mark.parametrize(
    ("name", "value"),
    [
        case("tid", field_bytes(10, b""), id="tid-int64_list", fixed=True),
        case("duration_ns", field_bytes(29, b""), id="duration_ns-string", fixed=True),
        case("stream", field_bytes(29, b"s"), id="stream-string", fixed=True),
        case("is_cpu_op", field_varint(7, 5), id="is_cpu_op-int32", fixed=True),
    ],
)  # fmt: skip
def test_et_attribute_of_another_kind(
    base: dict[str, Path], tmp_path: Path, name: str, value: bytes
) -> None:
    accepted_then_simulated(out_dir(tmp_path), _with_attr(base, tmp_path, name, value))


def test_negative_duration(base: dict[str, Path], tmp_path: Path) -> None:
    def edit(_: Any, nodes: list[Any]) -> None:
        for attr in nodes[5].attr:
            if attr.name == "duration_ns":
                attr.int64_val = -(10**12)

    graph = handmade.edit_et(base["et"], tmp_path / "negative.et", edit)
    accepted_then_simulated(out_dir(tmp_path), graph)


def test_astra_sim_duration_2_64(base: dict[str, Path], tmp_path: Path) -> None:
    def edit(_: Any, nodes: list[Any]) -> None:
        for node in nodes:
            node.duration_micros = 2**64 - 1

    graph = handmade.edit_et(base["et"], tmp_path / "long.et", edit)
    check(sim(out_dir(tmp_path), graph, base["et_peer"], options=("--resources", "astra-sim")))


def test_sim_error_names_the_file(base: dict[str, Path], tmp_path: Path) -> None:
    def edit(_: Any, nodes: list[Any]) -> None:
        nodes[6].id = nodes[5].id

    graph = handmade.edit_et(base["et"], tmp_path / "twice.et", edit)
    check(sim(out_dir(tmp_path), graph))


def test_timeline_of_graph_without_measured_starts(tmp_path: Path) -> None:
    """A text workload's graph has no measured start: --compare has nothing to add. (The
    reported TypeError does not reproduce on this tree; the test keeps it that way.)"""
    out = out_dir(tmp_path)
    prefix = tmp_path / "micro"
    workload = TEXT_WORKLOADS / "MICRO.txt"
    argv = ("Text", "--input", str(workload), "--output", str(prefix), "--num-npus", "2",
            "--num-passes", "1")  # fmt: skip
    check(Case("converter", argv, (workload,), (), tmp_path))
    graph = Path(f"{prefix}.0.et")
    for options in (["--compare"], ["--compare", "--timeline-segments"]):
        timeline = out / "timeline.json"
        check(Case("sim", (str(graph), "--timeline", str(timeline), *options), (graph,),
                   (timeline,), out))  # fmt: skip
        check(timeline_of(timeline, out_dir(tmp_path / "again")))


@pytest.mark.parametrize("cleared", ["starts", "durations", "both"])
def test_timeline_and_plots_of_graphs_without_measured_times(
    base: dict[str, Path], tmp_path: Path, cleared: str
) -> None:
    """Issue 30 reported this again (finding 9: "a timeline asked for a graph with no
    measured times"); it does not reproduce. Both ranks of the synthetic job with their
    measured starts, their durations (field and ``duration_ns``) or both cleared, and one
    rank alone so: timeline (--compare, --timeline-segments) and both plots."""

    def edit(_: Any, nodes: list[Any]) -> None:
        for node in nodes:
            if cleared != "durations":
                node.ClearField("start_time_micros")
            if cleared != "starts":
                node.ClearField("duration_micros")
                kept = [a for a in node.attr if a.name != "duration_ns"]
                del node.attr[:]
                node.attr.extend(kept)

    graphs = [handmade.edit_et(base[key], tmp_path / f"{key}.et", edit)
              for key in ("et", "et_peer")]  # fmt: skip
    for files in (graphs, [base["et"], graphs[1]]):
        out = out_dir(tmp_path / f"{files[0].stem}-out")
        timeline, plot, bars = out / "timeline.json", out / "u.png", out / "m.png"
        options = ("--timeline", str(timeline), "--compare", "--timeline-segments",
                   "--plot", str(plot), "--plot-makespans", str(bars))  # fmt: skip
        check(Case("sim", (*map(str, files), *options), tuple(files), (timeline, plot, bars),
                   out))  # fmt: skip
        check(timeline_of(timeline, out_dir(tmp_path / f"{files[0].stem}-again")))


def test_trace_info_attribute_of_another_kind(base: dict[str, Path], tmp_path: Path) -> None:
    graph = _with_attr(base, tmp_path, "comm_type", field_bytes(14, b""))
    check(Case("trace_info", (str(graph),), (graph,), (), out_dir(tmp_path)))


def test_astra_sim_collective_comm_size_of_another_kind(
    base: dict[str, Path], tmp_path: Path
) -> None:
    """Found by the long campaign: ``comm_size`` held as ``bytes_val`` on a collective made
    ``chakra_sim --resources astra-sim`` fail with a ValueError; now one line names the
    file, the node and the attribute: chakra_validate's finding, or with ``--lenient``
    what ASTRA-sim's model cannot read."""

    def edit(_: Any, nodes: list[Any]) -> None:
        node = next(n for n in nodes if n.type == NodeType.COMM_COLL_NODE)
        for attr in node.attr:
            if attr.name == "comm_size":
                attr.bytes_val = b"\x00"

    graph = handmade.edit_et(base["et"], tmp_path / "bytes_size.et", edit)
    result, outcome = check(sim(out_dir(tmp_path), graph, options=("--resources", "astra-sim")))
    assert outcome.verdict is Verdict.CLEAN_ERROR
    assert "holds comm_size as bytes_val, but the feeder reads only int64_val" in result.stderr
    result, outcome = check(
        sim(out_dir(tmp_path / "lenient"), graph, options=("--resources", "astra-sim", "--lenient"))
    )
    assert outcome.verdict is Verdict.CLEAN_ERROR
    assert "attribute comm_size holds bytes_val, not an integer" in result.stderr.splitlines()[-1]


def test_visualizer_attribute_of_another_kind_names_the_file(
    base: dict[str, Path], tmp_path: Path
) -> None:
    """Found by the long campaign: ``duration_ns`` as ``float_val`` gave chakra_visualizer
    an error naming the node but not the file."""

    def edit(_: Any, nodes: list[Any]) -> None:
        node = next(n for n in nodes if any(a.name == "duration_ns" for a in n.attr))
        next(a for a in node.attr if a.name == "duration_ns").float_val = -1.5

    graph = handmade.edit_et(base["et"], tmp_path / "float_duration.et", edit)
    out = out_dir(tmp_path)
    target = out / "graph.dot"
    result, outcome = check(Case("visualizer", ("--input_filename", str(graph),
                                                "--output_filename", str(target)),
                                 (graph,), (target,), out))  # fmt: skip
    assert outcome.verdict is Verdict.CLEAN_ERROR
    assert str(graph) in result.stderr and "duration_ns" in result.stderr


def test_a_repeated_stream_of_another_kind(base: dict[str, Path], tmp_path: Path) -> None:
    """Found by the long campaign: a GPU node with a second ``stream`` attribute held as
    ``bytes_val``. chakra_validate checked the first copy only and accepted the file;
    chakra_sim reads the last and refused it. Now chakra_validate checks every copy."""

    def edit(_: Any, nodes: list[Any]) -> None:
        node = next(n for n in nodes if any(a.name == "stream" for a in n.attr))
        node.attr.add(name="stream", bytes_val=b"x" * 12)

    graph = handmade.edit_et(base["et"], tmp_path / "two_streams.et", edit)
    accepted_then_simulated(out_dir(tmp_path), graph)
    result, _ = check(validate(out_dir(tmp_path), graph))
    assert result.returncode == 1 and "holds stream as bytes_val" in result.stdout


def test_duration_ns_just_below_2_63(base: dict[str, Path], tmp_path: Path) -> None:
    """Found by the long campaign: ``duration_ns`` = 2^63-1 (as ``sint64_val``). It is below
    2^63, so chakra_validate accepted it; chakra_sim keeps durations as float µs, where it
    rounds up to 2^63 ns, and refused it. chakra_validate now applies the same test."""

    def edit(_: Any, nodes: list[Any]) -> None:
        node = next(n for n in nodes if any(a.name == "duration_ns" for a in n.attr))
        next(a for a in node.attr if a.name == "duration_ns").sint64_val = 2**63 - 1

    graph = handmade.edit_et(base["et"], tmp_path / "long_ns.et", edit)
    accepted_then_simulated(out_dir(tmp_path), graph)
    result, _ = check(validate(out_dir(tmp_path), graph))
    assert result.returncode == 1 and "duration_ns 9223372036854775807" in result.stdout
