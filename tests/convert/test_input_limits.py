"""Input limits of the converter: ids, times, header integers and process-group tables a
``.et`` cannot hold are refused (or, for the group table, left unknown) where they are read."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

from chakra.convert.classify import process_groups
from chakra.convert.et_plus_input import EtPlusNode, load_et_plus
from chakra.convert.et_plus_lines import read_by_lines
from chakra.errors import TraceFormatError
from chakra.ingest.host_comms import group_problem, parse_process_groups
from chakra.ingest.host_model import OpArgs
from tests.convert.test_et_plus_input import et_plus_node


def write(path: Path, nodes: list[dict[str, Any]], **header: Any) -> Path:
    path.write_text(json.dumps({"schema": "1.1.1-chakra.0.0.4", "nodes": nodes, **header}))
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"id": 2**64 - 1}, "node id 18446744073709551615 is 2^62 or more"),
        ({"ts": 2**70}, "node 2: ts 1180591620717411303424 is not a finite time"),
        ({"ts": 1e308}, "node 2: ts 1e+308 is not a finite time"),
        ({"dur": -1e300}, "node 2: dur -1e+300 is not a finite time"),
    ],
)
def test_node_values_out_of_range_name_file_and_node(
    tmp_path: Path, edit: dict, message: str
) -> None:
    path = write(tmp_path / "p.json", [{**et_plus_node(2, 1), **edit}])
    with pytest.raises(TraceFormatError, match=re.escape(message)) as info:
        load_et_plus(path)
    assert str(info.value).startswith(str(path))


@pytest.mark.parametrize("name", ["start_ts", "finish_ts", "pid"])
def test_header_integers_of_2_64_name_the_file(tmp_path: Path, name: str) -> None:
    path = write(tmp_path / "p.json", [et_plus_node(2, 1)], **{name: 2**64})
    with pytest.raises(TraceFormatError, match=f"header {name} .* is not 0 to 2") as info:
        load_et_plus(path)
    assert str(info.value).startswith(str(path))


def _init_node(table: Any) -> EtPlusNode:
    inputs = json.dumps({"values": table, "shapes": [], "types": ["String"]}).encode()
    return EtPlusNode(id=1, name="## process_group:init ##", inputs=msgspec.Raw(inputs))


@pytest.mark.parametrize(
    "group",
    [
        {"pg_name": "0", "ranks": 5},
        {"pg_name": "0", "ranks": [0, 2**63]},
        {"pg_name": "0", "ranks": [], "group_size": 2**70},
        {"pg_name": "0", "ranks": [], "group_size": -1},
        {"pg_name": {}, "ranks": [0]},
    ],
)
def test_group_tables_out_of_range_are_unknown(group: dict) -> None:
    assert process_groups(_init_node([json.dumps([group])])) == []


def test_group_tables_that_are_not_json_strings_are_unknown() -> None:
    assert process_groups(_init_node(5)) == []
    assert process_groups(_init_node(['[{"pg_name": "0", "group_size": -Infinity}]'])) == []
    huge = '[{"pg_name": "0", "group_size": ' + "9" * 5000 + "}]"
    assert process_groups(_init_node([huge])) == []
    good = [{"pg_name": "0", "ranks": [0, 1]}]
    assert process_groups(_init_node([json.dumps(good)])) == good


def test_group_tables_expanding_beyond_the_limit_are_unknown() -> None:
    """Groups of ``ranks: []`` stand for range(group_size): 40 of 2^24 ranks expanded to
    671 million ranks (MemoryError); over 2^24 ranks in all, the table is unknown."""
    table = [{"pg_name": str(n), "ranks": [], "group_size": 2**24} for n in range(40)]
    assert process_groups(_init_node([json.dumps(table)])) == []
    assert process_groups(_init_node([json.dumps(table[:1])])) == table[:1]


def test_host_group_table_checks() -> None:
    assert parse_process_groups(OpArgs(b'{"values": 5}'))[0] == ()
    table = json.dumps([{"pg_name": "0", "ranks": [], "group_size": 2**70}])
    groups, note = parse_process_groups(OpArgs(json.dumps({"values": [table]}).encode()))
    assert groups == () and note is not None and "group_size" in note
    assert group_problem([0, 1], 2) is None and group_problem([True], None) is not None


def _lines(*nodes: bytes) -> bytes:
    head = b'{"schema": "1.1.1-chakra.0.0.4",\n"chakra_link": {"format": "x"},\n"nodes": [\n'
    return head + b"\n".join(nodes) + b"\n]}\n"


@pytest.mark.parametrize(
    ("nodes", "readable"),
    [
        ((b'{"id": 1, "name": "a"},', b'{"id": 2, "name": "b"}'), True),
        ((b'{"id": 1, "name": "a"}', b'{"id": 2, "name": "b"}'), False),  # a comma missing
        ((b'{"id": 1, "name": "a"},', b'{"id": 2, "name": "b"},'), False),  # one too many
        ((b'{"id": 1, "name": "a"},,', b'{"id": 2, "name": "b"}'), False),
    ],
)
def test_node_lines_need_their_commas(tmp_path: Path, nodes: tuple, readable: bool) -> None:
    """The line reader takes only JSON as written; anything else goes to the whole-document
    decode, which reports where it breaks."""
    path = tmp_path / "p.json"
    path.write_bytes(_lines(*nodes))
    read = read_by_lines(path, msgspec.json.Decoder(dict), msgspec.json.decode)
    assert (read is not None) is readable
    if readable:
        assert [n["id"] for n in read[1]] == [1, 2]


def test_invalid_utf8_in_inputs_or_outputs_names_file_and_node(tmp_path: Path) -> None:
    node = et_plus_node(2, 1, outputs={"values": ["BAD"], "shapes": [[]], "types": ["String"]})
    path = write(tmp_path / "p.json", [node])
    path.write_bytes(path.read_bytes().replace(b'"BAD"', b'"\xff\xfe"'))
    with pytest.raises(TraceFormatError, match="node 2: inputs or outputs hold invalid UTF-8"):
        load_et_plus(path)
