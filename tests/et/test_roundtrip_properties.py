"""Property tests: whatever nodes are written, the reader gives them back unchanged."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chakra.errors import ChakraError
from chakra.et import GlobalMetadata, IOInfo, Node, NodeType, read_et, write_et
from chakra.et.framing import encode_varint, iter_framed_messages
from chakra.et.schema import AttributeProto

U64 = st.integers(0, 2**64 - 1)
SCALARS: dict[str, st.SearchStrategy[Any]] = {
    "double": st.floats(allow_nan=False),
    "float": st.floats(width=32, allow_nan=False),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
    "uint32": st.integers(0, 2**32 - 1),
    "uint64": U64,
    "sint32": st.integers(-(2**31), 2**31 - 1),
    "sint64": st.integers(-(2**63), 2**63 - 1),
    "fixed32": st.integers(0, 2**32 - 1),
    "fixed64": U64,
    "sfixed32": st.integers(-(2**31), 2**31 - 1),
    "sfixed64": st.integers(-(2**63), 2**63 - 1),
    "bool": st.booleans(),
    "string": st.text(max_size=20),
    "bytes": st.binary(max_size=20),
}


@st.composite
def attributes(draw: st.DrawFn) -> Any:
    attr = AttributeProto(name=draw(st.text(max_size=12)), doc_string=draw(st.text(max_size=5)))
    kind = draw(st.sampled_from(sorted(SCALARS)))
    if draw(st.booleans()):
        getattr(attr, f"{kind}_list").values.extend(draw(st.lists(SCALARS[kind], max_size=4)))
    elif draw(st.booleans()):
        setattr(attr, f"{kind}_val", draw(SCALARS[kind]))
    return attr


@st.composite
def nodes(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 9)) == 0:  # an empty node (zero bytes) is refused on reading
        return Node(id=0, name="a")  # the smallest a node can be: an id of 0, but a name
    node = Node(
        id=draw(U64),
        name=draw(st.text(min_size=1, max_size=30)),
        type=draw(st.sampled_from(list(NodeType))),
        ctrl_deps=draw(st.lists(U64, max_size=3)),
        data_deps=draw(st.lists(U64, max_size=5)),
        start_time_micros=draw(U64),
        duration_micros=draw(U64),
    )
    for field in ("inputs", "outputs"):
        if draw(st.booleans()):
            getattr(node, field).CopyFrom(
                IOInfo(values=draw(st.text(max_size=10)), shapes="[[1]]", types="['Int']")
            )
    for attr in draw(st.lists(attributes(), max_size=4)):
        node.attr.add().CopyFrom(attr)
    return node


metadata = st.builds(lambda v: GlobalMetadata(version=v), st.text(max_size=8))


@pytest.mark.parametrize("name", ["trace.et", "trace.et.gz"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(meta=metadata, written=st.lists(nodes(), max_size=12))
def test_write_then_read_gives_the_same_messages(name: str, meta: Any, written: list) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        assert write_et(path, meta, written) == len(written)
        read_meta, read_nodes = read_et(path)
    assert read_meta == meta
    assert read_nodes == written


@settings(max_examples=200, deadline=None)
@given(bodies=st.lists(st.binary(max_size=300), max_size=8), chunk=st.integers(1, 64))
def test_framing_round_trips_with_any_chunk_size(bodies: list[bytes], chunk: int) -> None:
    data = b"".join(encode_varint(len(b)) + b for b in bodies)

    class Trickle(io.BytesIO):
        def read(self, size: int = -1) -> bytes:
            return super().read(min(chunk, size if size >= 0 else chunk))

    assert [body for _, body in iter_framed_messages(Trickle(data), "x")] == bodies


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=400))
def test_arbitrary_bytes_either_read_or_raise_a_chakra_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.et"
        path.write_bytes(data)
        try:
            read_et(path)
        except ChakraError as exc:
            assert str(exc).startswith(str(path))


@settings(max_examples=100, deadline=None)
@given(
    sizes=st.lists(st.one_of(st.integers(0, 200), st.integers(16_370, 16_400)), max_size=6),
    chunk=st.integers(1, 40_000),
    cut=st.integers(0, 10**6),
)
def test_framing_offsets_and_cuts_across_prefix_lengths(sizes: list[int], chunk: int,
                                                        cut: int) -> None:  # fmt: skip
    bodies = [bytes([i % 251]) * size for i, size in enumerate(sizes)]
    frames = [encode_varint(len(b)) + b for b in bodies]
    starts = [sum(map(len, frames[:i])) for i in range(len(frames))]
    data = b"".join(frames)

    class Trickle(io.BytesIO):
        def read(self, size: int = -1) -> bytes:
            return super().read(min(chunk, size if size >= 0 else chunk))

    read = list(iter_framed_messages(Trickle(data), "x"))
    assert read == list(zip(starts, bodies))
    cut = cut % (len(data) + 1)
    whole = [i for i, start in enumerate(starts) if start + len(frames[i]) <= cut]
    got: list[tuple[int, bytes]] = []
    try:
        got.extend(iter_framed_messages(Trickle(data[:cut]), "x"))
    except ChakraError as exc:
        assert f"offset {starts[len(whole)]}" in str(exc)
    assert got == [(starts[i], bodies[i]) for i in whole]
