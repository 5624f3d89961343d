"""One named test per failure a fuzz campaign reported (issue "[hardening]"), and a few this
suite's own campaign found: bad input gets one error line naming the file, status 1 (2 for
usage), no output; status 0 only with a valid output; never a traceback, signal or hang.

Inputs are made at test time from the seeds (see ``conftest.py``) by :mod:`handmade`. Most
cases fail on today's code and are marked ``xfail(strict=True)``: when a fix makes one pass,
the unexpected pass fails the suite, telling the fixer to remove the mark.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz import handmade
from tests.fuzz.checks import (
    GIB,
    case,
    check,
    convert,
    host_link,
    out_dir,
    sim,
    timeline_of,
    validate,
)
from tests.fuzz.harness import Case, Verdict, run_tool
from tests.fuzz.targets import FIXTURES, TEXT_WORKLOADS

# --- JSON nested 100k deep inside an otherwise valid document ------------------------------


def _deep_host(base: dict[str, Path], tmp_path: Path) -> Path:
    document = handmade.read_json(base["host"])
    document["nodes"][5]["inputs"]["values"] = "DEEP"
    return handmade.write_json(tmp_path / "deep_host.json", document, {"DEEP": handmade.nested()})


def _deep_events(source: Path, tmp_path: Path) -> Path:
    document = handmade.read_json(source)
    document["traceEvents"][5]["args"] = "DEEP"
    return handmade.write_json(tmp_path / f"deep_{source.name}", document,
                               {"DEEP": handmade.nested()})  # fmt: skip


@pytest.mark.parametrize(
    "tool",
    [
        case("trace_info", fixed=True),
        case("trace_link-host", fixed=True),
        case("trace_link-kineto", fixed=True),
        case("converter", fixed=True),
        case("sim", fixed=True),
        case("timeline_visualizer", fixed=True),
    ],
)  # fmt: skip
def test_json_nested_100k_deep(base: dict[str, Path], tmp_path: Path, tool: str) -> None:
    out = out_dir(tmp_path)
    if tool == "trace_info":
        deep = _deep_host(base, tmp_path)
        check(Case("trace_info", (str(deep),), (deep,), (), out))
    elif tool == "trace_link-host":
        check(host_link(_deep_host(base, tmp_path), base["kineto"], out))
    elif tool == "trace_link-kineto":
        check(host_link(base["host"], _deep_events(base["kineto"], tmp_path), out))
    elif tool == "converter":
        check(convert(_deep_host(base, tmp_path), out, "--rank", "0"))
    elif tool == "sim":
        check(sim(out, _deep_host(base, tmp_path)))
    else:
        check(timeline_of(_deep_events(base["timeline"], tmp_path), out))


# --- a 2 MB gzip inflating to 2 GiB: an answer within 10 s, under 2 GiB of memory ----------


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """2 GiB once inflated, 2 MB on disk: spaces alone, and spaces inside the opening and
    closing of a host ET, a Kineto trace and a Chrome trace (so a reader gets past its
    first bytes and must hold the budget while reading)."""
    folder = tmp_path_factory.mktemp("bombs")
    wrappers = {
        "spaces": (b"", b""),
        "host": (b'{"schema":"1.1.1-chakra.0.0.4","pid":1,"nodes":[', b"]}"),
        "kineto": (b'{"schemaVersion":1,"traceEvents":[', b"]}"),
        "chrome": (b'{"traceEvents":[', b"]}"),
    }
    paths = {}
    for name, (prefix, suffix) in wrappers.items():
        paths[name] = folder / f"{name}.json.gz"
        handmade.gzip_bomb(paths[name], prefix=prefix, suffix=suffix)
    return paths


def _bomb_case(base: dict[str, Path], bombs: dict[str, Path], out: Path, which: str) -> Case:
    tool, bomb = which.split("-", 1)
    path = bombs[bomb]
    if tool == "trace_link":
        return (
            host_link(path, base["kineto"], out)
            if bomb == "host"
            else host_link(base["host"], path, out)
        )
    if tool == "converter":
        return convert(path, out, "--rank", "0")
    if tool == "sim":
        return sim(out, path)
    if tool == "timeline_visualizer":
        return timeline_of(path, out)
    if tool == "pipeline":
        host, device = (path, base["kineto"]) if bomb == "host" else (base["host"], path)
        return Case("pipeline", ("--host-trace", str(host), "--device-trace", str(device),
                                 "--output-dir", str(out / "run"), "--no-plot"),
                    (host, device), (), out)  # fmt: skip
    if tool in ("jsonizer", "visualizer"):
        target = out / ("jsonized.json" if tool == "jsonizer" else "graph.dot")
        return Case(tool, ("--input_filename", str(path), "--output_filename", str(target)),
                    (path,), (target,), out)  # fmt: skip
    if tool == "validate":
        return validate(out, path)
    assert tool == "trace_info", which
    return Case("trace_info", (str(path),), (path,), (), out)


@pytest.mark.parametrize(
    "which",
    [
        "trace_info-spaces", "trace_info-host", "trace_link-host", "trace_link-kineto",
        "converter-host", "converter-spaces", "sim-host", "sim-spaces", "validate-spaces",
        "jsonizer-spaces", "visualizer-spaces", "timeline_visualizer-chrome",
        "pipeline-host", "pipeline-kineto",
    ],
)  # fmt: skip
@pytest.mark.slow
def test_gzip_bomb(
    base: dict[str, Path], bombs: dict[str, Path], tmp_path: Path, which: str
) -> None:
    """Every tool that reads a (gzip) file answers a 2 GiB bomb within 10 s and 2 GiB of
    memory, with one line (the inflation budget) or, if the content stays valid, a result."""
    run = dataclasses.replace(_bomb_case(base, bombs, out_dir(tmp_path), which), timeout_s=12.0)
    result, _ = check(run, run_tool)  # a subprocess: its own peak RSS
    assert result.wall_s < 10, result.wall_s
    assert result.peak_rss_bytes < 2 * GIB, result.peak_rss_bytes


# --- null, a dict or an int where a string or a list is expected ---------------------------


def _host_with(base: dict[str, Path], tmp_path: Path, edit: Any, which: str = "host") -> Path:
    document = handmade.read_json(base[which])
    edit(document["nodes"])
    return handmade.write_json(tmp_path / "edited_host.json", document)


def _node_named(nodes: list[dict], name: str) -> dict:
    return next(node for node in nodes if node["name"] == name)


def _pg_table(value: Any) -> Any:
    """Set the process-group table (the JSON string input of ``## process_group:init ##``)."""

    def edit(nodes: list[dict]) -> None:
        _node_named(nodes, "## process_group:init ##")["inputs"]["values"] = value

    return edit


def _comm_field(field: str, value: Any) -> Any:
    def edit(nodes: list[dict]) -> None:
        _node_named(nodes, "record_param_comms")["inputs"][field] = value

    return edit


def _any_inputs(field: str, value: Any) -> Any:
    """Set an input field of the first communication op (gloo:*) with inputs."""

    def edit(nodes: list[dict]) -> None:
        comm = (n for n in nodes if n["name"].startswith("gloo:") and n["inputs"]["types"])
        next(comm)["inputs"][field] = value

    return edit


def _et_plus_collective(key: str, value: Any) -> Any:
    def edit(node: dict) -> None:
        node["collective"][key] = value

    return edit


@pytest.mark.parametrize(
    ("where", "edit"),
    [
        case("host-pg-table-int", _pg_table(5), fixed=True),
        case("host-pg-table-ranks-int", _pg_table(['[{"pg_name": {}, "ranks": 5}]']),
             fixed=True),
        case("host-pg-table-null", _pg_table([None]),
             fixed=True),
        case("host-comm-outputs-null", _comm_field("outputs", None), fixed=True),
        case("host-inputs-types-int", _any_inputs("types", -(2**70)), fixed=True),
        case("host-comm-types-dict", _comm_field("types", {"a": 1}), fixed=True),
        case("host-comm-values-int", _comm_field("values", 7), fixed=True),
        case("et_plus-collective-name-dict", _et_plus_collective("name", {}), fixed=True),
        case("et_plus-collective-pg_ranks-int", _et_plus_collective("pg_ranks", 3), fixed=True),
    ],
)  # fmt: skip
def test_wrong_json_type(base: dict[str, Path], tmp_path: Path, where: str, edit: Any) -> None:
    out = out_dir(tmp_path)
    if where.startswith("et_plus"):
        source = handmade.edit_et_plus(base["et_plus"], tmp_path / "edited.json", edit,
                                       has=b'"collective"')  # fmt: skip
        check(convert(source, out))
        return
    source = _host_with(base, tmp_path, edit, "gloo_host" if "inputs" in where else "host")
    check(convert(source, out, "--rank", "0"))
    check(host_link(source, base["kineto"], out))


# --- invalid UTF-8 -------------------------------------------------------------------------


def _utf8_host(base: dict[str, Path], tmp_path: Path, field: str) -> Path:
    document = handmade.read_json(base["host"])
    node = next(n for n in document["nodes"] if n["inputs"]["types"])
    node["inputs"][field][0] = "BAD"
    return handmade.write_json(tmp_path / f"utf8_{field}.json", document,
                               {"BAD": b'"\xff\xfe"'})  # fmt: skip


@pytest.mark.parametrize(
    "where",
    [
        case("host-values-converter", fixed=True),
        case("host-values-trace_link", fixed=True),
        case("host-types-converter", fixed=True),
        case("host-types-trace_link", fixed=True),
        case("et_plus-outputs-converter", fixed=True),
        case("host-name-converter", fixed=True),
    ],
)  # fmt: skip
def test_invalid_utf8(base: dict[str, Path], tmp_path: Path, where: str) -> None:
    out = out_dir(tmp_path)
    if where.startswith("et_plus"):
        source = handmade.edit_et_plus(
            base["et_plus"], tmp_path / "utf8.json",
            lambda node: node["outputs"]["values"].insert(0, "BAD"),
        )  # fmt: skip
        data = source.read_bytes().replace(b'"BAD"', b'"\xff\xfe"', 1)
        source.write_bytes(data)
        check(convert(source, out))
        return
    if where.startswith("host-name"):
        document = handmade.read_json(base["host"])
        document["nodes"][5]["name"] = "BAD"
        source = handmade.write_json(tmp_path / "utf8_name.json", document, {"BAD": b'"\xff"'})
    else:
        source = _utf8_host(base, tmp_path, where.split("-")[1])
    if where.endswith("converter"):
        check(convert(source, out, "--rank", "0"))
    else:
        check(host_link(source, base["kineto"], out))


# --- an integer of 5,000 digits; NaN timestamps --------------------------------------------

DIGITS = b"9" * 5000


@pytest.mark.parametrize(
    "where",
    [
        case("kineto-ts", fixed=True),
        case("host-attr", fixed=True),
        case("host-pg-table", fixed=True),
        case("et_plus-ts", fixed=True),
        case("text-layer-count", fixed=True),
        case("chrome-ts", fixed=True),
        case("chrome-ts-fraction", fixed=True),
    ],
)  # fmt: skip
def test_integer_of_5000_digits(base: dict[str, Path], tmp_path: Path, where: str) -> None:
    out = out_dir(tmp_path)
    raw = DIGITS + b".5" if where.endswith("fraction") else DIGITS
    _huge_or_nan(base, tmp_path, out, where.removesuffix("-fraction"), raw)


@pytest.mark.parametrize(
    "where",
    [
        case("kineto-ts", fixed=True),
        case("et_plus-ts", fixed=True),
        case("chrome-ts", fixed=True),
    ],
)  # fmt: skip
def test_nan_timestamp(base: dict[str, Path], tmp_path: Path, where: str) -> None:
    out = out_dir(tmp_path)
    _huge_or_nan(base, tmp_path, out, where, b"NaN")


def _huge_or_nan(base: dict[str, Path], tmp_path: Path, out: Path, where: str, raw: bytes) -> None:
    """``raw`` (a number JSON may not hold) as the value of ``where``."""
    swap = {"RAW": raw}
    if where == "kineto-ts":
        document = handmade.read_json(base["kineto"])
        next(e for e in document["traceEvents"] if e.get("ph") == "X")["ts"] = "RAW"
        kineto = handmade.write_json(tmp_path / "kineto.json", document, swap)
        check(host_link(base["host"], kineto, out))
    elif where == "host-attr":
        document = handmade.read_json(base["host"])
        document["nodes"][5]["attrs"][0]["value"] = "RAW"
        host = handmade.write_json(tmp_path / "host.json", document, swap)
        check(convert(host, out, "--rank", "0"))
    elif where == "host-pg-table":
        document = handmade.read_json(base["host"])
        table = json.dumps([{"pg_name": "0", "pg_desc": "default_pg", "ranks": [0, 1],
                             "group_size": "RAW", "group_count": 1}])  # fmt: skip
        table = table.replace('"RAW"', raw.decode())
        _node_named(document["nodes"], "## process_group:init ##")["inputs"]["values"] = [table]
        check(convert(handmade.write_json(tmp_path / "host.json", document), out, "--rank", "0"))
    elif where == "et_plus-ts":
        source = handmade.edit_et_plus(base["et_plus"], tmp_path / "etp.json",
                                       lambda node: node.update(ts="RAW"))  # fmt: skip
        source.write_bytes(source.read_bytes().replace(b'"RAW"', raw, 1))
        check(convert(source, out))
    elif where == "text-layer-count":
        text = (TEXT_WORKLOADS / "MICRO.txt").read_text().replace("\n5\n", "\nRAW\n", 1)
        workload = tmp_path / "micro.txt"
        workload.write_bytes(text.encode().replace(b"RAW", raw))
        argv = ("Text", "--input", str(workload), "--output", str(out / "w"), "--num-npus", "2",
                "--num-passes", "1")  # fmt: skip
        check(Case("converter", argv, (workload,), (), out))
    else:
        document = handmade.read_json(base["timeline"])
        next(e for e in document["traceEvents"] if e.get("ph") == "X")["ts"] = "RAW"
        trace = handmade.write_json(tmp_path / "timeline.json", document, swap)
        check(timeline_of(trace, out))


# --- what chakra_converter writes must pass chakra_validate --------------------------------


@pytest.mark.parametrize(
    "where",
    [
        case("et_plus-ts-2^70", fixed=True),
        case("et_plus-id-2^64-1", fixed=True),
        case("et_plus-ts-1e308",
             fixed=True),
        case("host-id-2^64-1", fixed=True),
        case("gloo-host-without-rank",
             fixed=True),
    ],
)  # fmt: skip
def test_converter_output_validates(base: dict[str, Path], tmp_path: Path, where: str) -> None:
    out = out_dir(tmp_path)
    if where == "gloo-host-without-rank":
        check(convert(base["gloo_host"], out))
        return
    if where == "host-id-2^64-1":
        document = handmade.read_json(base["host"])
        document["nodes"][10]["id"] = 2**64 - 1
        check(convert(handmade.write_json(tmp_path / "host.json", document), out, "--rank", "0"))
        return
    edits = {"et_plus-ts-2^70": lambda node: node.update(ts=2**70),
             "et_plus-id-2^64-1": lambda node: node.update(id=2**64 - 1),
             "et_plus-ts-1e308": lambda node: node.update(ts=1e308)}  # fmt: skip
    source = handmade.edit_et_plus(base["et_plus"], tmp_path / "etp.json", edits[where])
    check(convert(source, out))


def test_et_plus_line_missing_a_comma(base: dict[str, Path], tmp_path: Path) -> None:
    lines = handmade.et_plus_lines(base["et_plus"])
    at = handmade.first_node_line(lines)
    lines[at] = lines[at].rstrip(b",")
    source = tmp_path / "no_comma.json"
    source.write_bytes(b"\n".join(lines))
    _, outcome = check(convert(source, out_dir(tmp_path)))
    assert outcome.verdict is Verdict.CLEAN_ERROR, "malformed JSON was converted"


@pytest.mark.parametrize(
    ("tool", "group"),
    [
        case("sim", {"group_size": 2**70}, id="sim-group_size-2^70",
             fixed=True),
        case("converter", {"group_size": float("-inf")}, id="converter-group_size--Infinity",
             fixed=True),
        case("converter", {"ranks": [0, 2**63]}, id="converter-rank-2^63",
             fixed=True),
    ],
)  # fmt: skip
def test_process_group_table_values(
    base: dict[str, Path], tmp_path: Path, tool: str, group: dict
) -> None:
    """Numbers a process-group table cannot hold (the JSON string input of
    ``## process_group:init ##``)."""
    document = handmade.read_json(base["gloo_host"])
    entry = {"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cpu:gloo,cuda:gloo",
             "ranks": [], "group_size": 2, "group_count": 1, **group}  # fmt: skip
    node = _node_named(document["nodes"], "## process_group:init ##")
    node["inputs"]["values"] = [json.dumps([entry])]
    source = handmade.write_json(tmp_path / "host.json", document)
    out = out_dir(tmp_path)
    check(sim(out, source) if tool == "sim" else convert(source, out, "--rank", "0"))


# --- found by the long campaign: a send/recv whose peer no rank tells --------------------


def test_pipeline_of_one_rank_whose_send_has_no_known_peer(base: dict[str, Path],
                                                           tmp_path: Path) -> None:  # fmt: skip
    """gloo rank 0 alone, its process_group:init table without ``pg_name``: no group names
    the send's peer, and no other rank is given. chakra_pipeline used to write a ``.et``
    with a send lacking ``comm_dst`` (which chakra_validate rejects) and exit 0; now one
    line names the file and node, status 1, and the fresh output folder keeps only the
    rank it finished (its manifest, ET+ and .et: a rerun given the other rank reuses it)."""

    def edit(nodes: list[dict]) -> None:
        node = _node_named(nodes, "## process_group:init ##")
        table = json.loads(node["inputs"]["values"][0])
        for group in table:
            del group["pg_name"]
        node["inputs"]["values"][0] = json.dumps(table)

    host = _host_with(base, tmp_path, edit, "gloo_host")
    device = FIXTURES / "gloo_2rank" / "rank0.kineto.json.gz"
    out = out_dir(tmp_path)
    run = Case("pipeline", ("--host-trace", str(host), "--device-trace", str(device),
                            "--output-dir", str(out / "run"), "--no-plot"),
               (host, device), (), out)  # fmt: skip
    result, outcome = check(run)
    assert outcome.verdict is Verdict.CLEAN_ERROR, result.stderr
    assert "send/recv in all): the peer rank is unknown" in result.stderr
    kept = {"rank0.report.json", "rank0.et_plus.json", "workload.0.et"}
    assert {path.name for path in (out / "run").iterdir()} == kept


def test_process_group_name_with_a_lone_surrogate(base: dict[str, Path], tmp_path: Path) -> None:
    """Found by the long campaign: ``"pg_name": "\\ud800"`` inside the process_group:init
    table (a JSON string in a JSON string). json.loads lets the lone surrogate through and
    chakra_converter died encoding the name (UnicodeEncodeError). Now the table is taken as
    unreadable, as any other malformed table: the send/recv peers are then unknown, and the
    converter says so in one line (status 1) instead of writing an invalid .et."""

    def edit(nodes: list[dict]) -> None:
        node = _node_named(nodes, "## process_group:init ##")
        table = json.loads(node["inputs"]["values"][0])
        table[0]["pg_name"] = "\ud800"
        node["inputs"]["values"][0] = json.dumps(table)

    host = _host_with(base, tmp_path, edit, "gloo_host")
    result, outcome = check(convert(host, out_dir(tmp_path), "--rank", "0"))
    assert outcome.verdict is Verdict.CLEAN_ERROR
    assert "the peer rank is unknown" in result.stderr.splitlines()[-1]


def test_et_plus_inputs_types_not_a_list(fuzz_seeds: Any, tmp_path: Path) -> None:
    """Found by the long campaign: an ET+ communication op whose ``inputs.types`` is a number
    (``2^63-1``) made chakra_converter fail with a TypeError while sizing the message. Now
    such arguments hold no tensor: the size is unknown and the converter says so."""
    source = fuzz_seeds.folder / "gloo.0.et_plus.json"
    lines = handmade.et_plus_lines(source)
    edited = 0
    for at in range(3, len(lines)):
        if b'"name":"record_param_comms"' in lines[at] or b'"name":"gloo:' in lines[at]:
            comma = lines[at].endswith(b",")
            node = json.loads(lines[at].rstrip(b","))
            if isinstance(node.get("inputs"), dict):
                node["inputs"]["types"] = 2**63 - 1
                edited += 1
            lines[at] = json.dumps(node, separators=(",", ":")).encode() + (b"," if comma else b"")
    assert edited > 0
    target = tmp_path / "types.et_plus.json"
    target.write_bytes(b"\n".join(lines))
    result, _ = check(convert(target, out_dir(tmp_path), "--rank", "0"))
    assert "Traceback" not in result.stderr


def test_process_group_table_nested_100k_deep(base: dict[str, Path], tmp_path: Path) -> None:
    """Found by the long campaign: JSON nested 100k deep *inside* the process_group:init
    string (a JSON document in a JSON string, decoded apart from the file) raised a
    RecursionError in chakra_sim (and every reader of host ETs). Now the table is taken as
    unreadable, as any malformed table: groups unknown, said in a warning."""

    def edit(nodes: list[dict]) -> None:
        node = _node_named(nodes, "## process_group:init ##")
        deep = '{"a":' * handmade.DEEP + "1" + "}" * handmade.DEEP
        node["inputs"]["values"][0] = f'[{{"pg_name": "0", "ranks": [0, 1]}}, {deep}]'

    host = _host_with(base, tmp_path, edit, "gloo_host")
    out = out_dir(tmp_path)
    kineto = FIXTURES / "gloo_2rank" / "rank0.kineto.json.gz"
    for run in (sim(out, host, options=("--resources", "astra-sim")),
                convert(host, out, "--rank", "0"), host_link(host, kineto, out)):  # fmt: skip
        result, _ = check(run)
        assert "nested too deep to decode; groups unknown" in result.stderr


@pytest.mark.parametrize("name", ["collective_name", "dtype", "pg_name", "pg_size",
                                  "in_msg_nelems"])  # fmt: skip
def test_et_plus_comm_attr_of_another_type(base: dict[str, Path], tmp_path: Path,
                                           name: str) -> None:  # fmt: skip
    """Found by the long campaign: a ``record_param_comms`` attr holding a number where a
    string is expected (``collective_name`` = 2^63-1) made chakra_converter fail with an
    AttributeError. Each such attr, of the wrong type, now reads as unknown."""

    def edit(node: dict) -> None:
        for attr in node["attrs"]:
            if attr["name"] == name:
                attr["value"] = 2**63 - 1 if isinstance(attr["value"], str) else "x"

    source = handmade.edit_et_plus(base["et_plus"], tmp_path / "comm_attr.json", edit,
                                   has=b'"record_param_comms"')  # fmt: skip
    result, _ = check(convert(source, out_dir(tmp_path)))
    assert "Traceback" not in result.stderr
