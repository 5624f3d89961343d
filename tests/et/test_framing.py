"""Varint size prefixes and the length-delimited message stream."""

from __future__ import annotations

import io

import pytest

from chakra.errors import EtFormatError
from chakra.et.framing import encode_varint, iter_framed_messages
from tests.fuzz.et_mutators import varint as plain_varint  # the definition, bit by bit


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),  # 300 = 0b10_0101100 -> 0xAC 0x02
        (16383, b"\xff\x7f"),
        (16384, b"\x80\x80\x01"),
        (2**32, b"\x80\x80\x80\x80\x10"),
    ],
)
def test_encode_varint_matches_hand_computed_bytes(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded


@pytest.mark.parametrize("bits", [7, 14, 21, 28, 35, 42, 49, 63, 64])
def test_encode_varint_at_each_table_boundary(bits: int) -> None:
    # the table paths (under 2**14, 2**28, 2**42) and the loop meet at these values
    for value in (2**bits - 2, 2**bits - 1, 2**bits, 2**bits + 1, 2**bits + 0x3FFF):
        if value < 2**64:
            assert encode_varint(value) == plain_varint(value), value


def frames(data: bytes) -> list[tuple[int, bytes]]:
    return list(iter_framed_messages(io.BytesIO(data), "mem.et"))


def test_messages_come_out_with_their_offsets() -> None:
    data = b"\x02ab" + b"\x00" + b"\x01c"
    assert frames(data) == [(0, b"ab"), (3, b""), (4, b"c")]


def test_zero_length_message_is_empty_not_end_of_stream() -> None:
    assert frames(b"\x00\x00\x01z") == [(0, b""), (1, b""), (2, b"z")]


def test_message_larger_than_one_read_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("chakra.et.framing.READ_CHUNK_BYTES", 7)
    body = bytes(range(200)) * 3
    data = encode_varint(len(body)) + body + b"\x01x"
    assert frames(data) == [(0, body), (2 + len(body), b"x")]


def test_cut_inside_size_prefix_names_file_and_offset() -> None:
    with pytest.raises(EtFormatError) as info:
        frames(b"\x01a\x80")
    assert info.value.offset == 2
    assert str(info.value) == "mem.et: file ends inside a message size prefix at byte offset 2"


def test_cut_inside_body_names_file_and_offset() -> None:
    with pytest.raises(EtFormatError) as info:
        frames(b"\x01a\x05abc")
    assert info.value.offset == 2
    assert "message of 5 bytes (3 present)" in str(info.value)


def test_overlong_varint_is_rejected() -> None:
    with pytest.raises(EtFormatError, match=r"over 10 bytes\) at byte offset 0"):
        frames(b"\xff" * 11 + b"\x00")


def test_absurd_size_is_rejected_before_reading_on() -> None:
    with pytest.raises(EtFormatError, match="exceeds protobuf's 2 GiB limit"):
        frames(encode_varint(1 << 40) + b"x")


def test_importing_the_converter_builds_no_varint_table() -> None:
    # the 0.8 MiB table of low groups is made on the first large varint written, not at
    # import: the converter's peak memory is reached before it writes any
    import subprocess
    import sys

    code = (
        "import chakra.convert.converter, chakra.convert.nodes\n"
        "from chakra.et import framing\n"
        "assert not framing._LOW_GROUPS, 'built at import'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
