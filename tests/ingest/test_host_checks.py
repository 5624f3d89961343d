"""Host ET reading limits: invalid UTF-8, argument lists of the wrong JSON type, header
values beyond int64: one TraceFormatError naming the file (and the node)."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path
from typing import Any, Callable

import pytest

from chakra.errors import TraceFormatError
from chakra.ingest.host_checks import MAX_DIGITS, check_digits
from chakra.ingest.host_loader import load_host_trace

SOURCE = Path(__file__).parents[1] / "data" / "pytorch213" / "gloo_2rank" / "rank0.host_et.json.gz"


def _document() -> dict[str, Any]:
    return json.loads(gzip.decompress(SOURCE.read_bytes()))


def _gloo(document: dict[str, Any]) -> dict[str, Any]:
    return next(n for n in document["nodes"] if n["name"].startswith("gloo:"))


def _write(tmp_path: Path, document: dict[str, Any]) -> Path:
    path = tmp_path / "host.json"
    path.write_text(json.dumps(document))
    return path


def test_the_source_loads() -> None:
    assert load_host_trace(SOURCE).ops


def test_invalid_utf8_names_file_and_offset(tmp_path: Path) -> None:
    document = _document()
    _gloo(document)["inputs"]["types"][0] = "BAD"
    path = _write(tmp_path, document)
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"BAD"', b'"\xff\xfe"'))
    with pytest.raises(TraceFormatError, match=r"host\.json: invalid UTF-8") as info:
        load_host_trace(path)
    assert info.value.offset == data.index(b'"BAD"') + 1


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda node: node["inputs"].__setitem__("types", 7), "inputs: Expected `array`"),
        (lambda node: node["inputs"]["types"].__setitem__(0, None), "inputs: Expected `str`"),
        (lambda node: node["outputs"].__setitem__("values", None), "outputs.values is not"),
        (lambda node: node["inputs"].__setitem__("shapes", {}), "inputs.shapes is not a list"),
    ],
)
def test_argument_lists_of_another_type(
    tmp_path: Path, edit: Callable[[dict], None], problem: str
) -> None:
    document = _document()
    node = _gloo(document)
    edit(node)
    with pytest.raises(TraceFormatError, match=rf"host\.json: node {node['id']} .*{problem}"):
        load_host_trace(_write(tmp_path, document))


@pytest.mark.parametrize("key", ["pid", "start_ts", "finish_ts"])
@pytest.mark.parametrize("value", [2**63, 2**64, 2**70, -(2**63) - 1])
def test_header_beyond_int64(tmp_path: Path, key: str, value: int) -> None:
    document = _document()
    document[key] = value
    with pytest.raises(TraceFormatError, match=rf"host\.json: .*{key}"):
        load_host_trace(_write(tmp_path, document))


def test_node_id_beyond_int64(tmp_path: Path) -> None:
    document = _document()
    document["nodes"][3]["id"] = 2**63
    with pytest.raises(TraceFormatError, match=r"host\.json: .*nodes\[3\]\.id"):
        load_host_trace(_write(tmp_path, document))


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, "9" * 30, 1e300])
def test_integer_attr_beyond_int64(tmp_path: Path, value: Any) -> None:
    document = _document()
    node = _gloo(document)
    attr = next(a for a in node["attrs"] if a["name"] == "rf_id")
    attr["value"] = value
    with pytest.raises(TraceFormatError, match=rf"host\.json: node {node['id']}: attr 'rf_id'"):
        load_host_trace(_write(tmp_path, document))


def test_number_of_5000_digits_in_arguments(tmp_path: Path) -> None:
    document = _document()
    _gloo(document)["inputs"]["values"].append("HUGE")
    path = _write(tmp_path, document)
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"HUGE"', b"9" * 5000))
    with pytest.raises(TraceFormatError, match=r"host\.json: a number of 4300 digits") as info:
        load_host_trace(path)
    assert info.value.offset == data.index(b'"HUGE"')


@pytest.mark.parametrize("start", [(1 << 16) - 10, (1 << 16) - 4300, 1 << 16, 3 * (1 << 16) + 1])
def test_digits_across_a_chunk_boundary(start: int) -> None:
    data = b" " * start + b"7" * MAX_DIGITS + b" " * 100
    with pytest.raises(TraceFormatError, match="a number of 4300 digits") as info:
        check_digits("host.json", data)
    assert info.value.offset == start
    check_digits("host.json", data[:-101])  # 4,299 digits: a number Python still parses


def test_digit_check_holds_no_copy_of_the_document() -> None:
    data = b"12345678," * 2_000_000  # 18 MB of short numbers
    tracemalloc.start()
    try:
        check_digits("host.json", data)
        peak_bytes = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak_bytes < 1 << 20  # a window's copies, not the 16 MiB chunks it had
