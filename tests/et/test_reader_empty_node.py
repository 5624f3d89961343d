"""An empty node message (zero bytes: a node always has an id or a name) is refused with one
error naming the file and offset, so that a file (or gzip) of zeros is not read as endless
empty nodes; chakra_trace_info's errors name the file."""

from __future__ import annotations

import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from chakra.errors import EtFormatError
from chakra.et import GlobalMetadata, Node, NodeType, read_et, write_et
from chakra.et.attributes import make_attr
from chakra.et.summary import summarize_et


def zeros_gzip(path: Path, size: int) -> None:
    """A gzip of ``size`` zero bytes (about 1 KiB of file per MiB), built in well under a
    second from one repeated, self-contained deflate block."""
    chunk = bytes(1 << 20)
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = comp.compress(chunk) + comp.flush(zlib.Z_FULL_FLUSH)
    count = size // len(chunk)
    crc = 0
    for _ in range(count):
        crc = zlib.crc32(chunk, crc)
    with path.open("wb") as out:
        out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")
        for _ in range(count):
            out.write(block)
        out.write(comp.flush(zlib.Z_FINISH))
        out.write(struct.pack("<II", crc & 0xFFFFFFFF, (count * len(chunk)) & 0xFFFFFFFF))


def test_zero_bytes_are_an_empty_node(tmp_path: Path) -> None:
    path = tmp_path / "zeros.et"
    path.write_bytes(bytes(4096))
    with pytest.raises(EtFormatError, match=r"zeros\.et: node #1 is an empty message.* offset 1"):
        read_et(path)


def test_a_node_of_id_0_with_a_name_reads(tmp_path: Path) -> None:
    path = tmp_path / "first.et"
    write_et(path, GlobalMetadata(version="0.0.4"), [Node(id=0, name="a")])
    assert [n.name for n in read_et(path)[1]] == ["a"]


def test_trace_info_on_a_gzip_of_2_gib_of_zeros_is_quick(tmp_path: Path) -> None:
    path = tmp_path / "zeros.et.gz"
    zeros_gzip(path, 2 << 30)
    began = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "chakra.cli.trace_info", str(path)],
                            capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert time.monotonic() - began < 10
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1 and str(path) in result.stderr, result.stderr
    assert result.stdout == ""


def test_summary_names_the_file_for_an_attribute_of_another_kind(tmp_path: Path) -> None:
    node = Node(id=1, name="ar", type=NodeType.COMM_COLL_NODE)
    node.attr.append(make_attr("comm_type", "x", "string_val"))
    path = tmp_path / "kind.et"
    write_et(path, GlobalMetadata(version="0.0.4"), [node])
    with pytest.raises(EtFormatError, match=r"kind\.et: node 1 \(ar\)"):
        summarize_et(path)
