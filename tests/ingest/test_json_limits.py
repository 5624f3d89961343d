"""Input limits at the JSON reading boundary: nesting too deep for Python, non-finite numbers."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chakra.errors import TraceFormatError
from chakra.ingest.json_input import (
    decode_element,
    decode_json,
    decode_or_raise,
    nesting_offset,
    object_keys,
)
from chakra.tools.log_timeline import TimelineError, normalise_chrome_trace

DEEP = b'{"nodes": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}"


def test_nesting_offset_skips_strings() -> None:
    assert nesting_offset(b'["[[[[", [[[]]]]', limit=3) == 10
    assert nesting_offset(b"[[]]", limit=3) is None


def test_decode_json_too_deep_is_one_error_with_offset() -> None:
    with pytest.raises(TraceFormatError, match=r"x\.json: .*nested deeper.*byte offset 508"):
        decode_json("x.json", DEEP, msgspec.json.Decoder(), "host ET")


def test_object_keys_too_deep() -> None:
    with pytest.raises(TraceFormatError, match="nested deeper"):
        object_keys("x.json", DEEP)


def test_decode_element_too_deep_has_no_offset() -> None:
    raw = [msgspec.Raw(b"[" * 100_000 + b"]" * 100_000)]
    with pytest.raises(TraceFormatError) as info:
        decode_element("x.json", raw, 0, msgspec.json.Decoder(), "host ET")
    assert info.value.offset is None


def test_decode_or_raise_passes_other_errors() -> None:
    with pytest.raises(msgspec.DecodeError):
        decode_or_raise("x.json", b"[", msgspec.json.Decoder())


@pytest.mark.parametrize(
    "text", ['[{"ph":"X","ts":NaN}]', '[{"ph":"X","ts":-Infinity}]', '[{"ph":"X","ts":1e999}]',
             "[" * 100_000],
)  # fmt: skip
def test_chrome_trace_refuses_non_finite_and_deep(tmp_path: Path, text: str) -> None:
    path = tmp_path / "t.json"
    path.write_text(text)
    with pytest.raises(TimelineError, match=r"t\.json: not JSON"):
        normalise_chrome_trace(path)


@pytest.mark.parametrize(
    ("ts", "dur", "problem"),
    [('"nan"', "1", "non-finite 'ts' nan"), ("1", '"inf"', "non-finite duration inf"),
     ("1", "-1", "negative duration -1"), ("9223372036854775808", "1", "'ts' of magnitude 2.63"),
     ('"-inf"', "1", "non-finite 'ts' -inf")],
)  # fmt: skip
def test_kineto_times_out_of_range(tmp_path: Path, ts: str, dur: str, problem: str) -> None:
    from chakra.ingest.device_loader import load_device_trace

    path = tmp_path / "k.json"
    path.write_text(
        '{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", '
        f'"pid": 1, "tid": 1, "ts": {ts}, "dur": {dur}}}]}}'
    )
    with pytest.raises(TraceFormatError, match=rf"k\.json: event 0 \('a'\) has a {problem}"):
        load_device_trace(path)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_dump_finite_refuses_non_finite(value: float) -> None:
    import io

    from chakra.errors import ChakraError
    from chakra.ingest.json_input import dump_finite

    with pytest.raises(ChakraError, match=r"^out\.json: cannot write it as JSON"):
        dump_finite({"ts": value}, io.StringIO(), "out.json")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip


@given(_JSON)
def test_dump_finite_writes_what_json_dump_writes(data: object) -> None:
    import io
    import json

    from chakra.ingest.json_input import dump_finite

    written = io.StringIO()
    dump_finite(data, written, "out.json")
    assert written.getvalue() == json.dumps(data)


def test_dump_finite_chunks_a_long_list_to_the_same_bytes() -> None:
    import io
    import json

    from chakra.errors import ChakraError
    from chakra.ingest.json_input import dump_finite

    # a timeline's shape: a dict around 25,001 events (three chunks, the last of one item)
    events = [{"name": f"op{k}", "ts": k * 0.5, "args": {"in": [k, "x"]}} for k in range(25_001)]
    document = {"traceEvents": events, "displayTimeUnit": "ms", 1: 2}
    written = io.StringIO()
    dump_finite(document, written, "t.json")
    assert written.getvalue() == json.dumps(document)
    events[20_000]["ts"] = float("nan")  # in a later chunk: still one error naming the file
    with pytest.raises(ChakraError, match=r"^t\.json: cannot write it as JSON"):
        dump_finite({"traceEvents": events}, io.StringIO(), "t.json")
