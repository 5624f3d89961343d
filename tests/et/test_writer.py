"""Writing .et files: exact bytes, gzip, atomicity."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from chakra.errors import EtFormatError, FileAccessError
from chakra.et import EtWriter, GlobalMetadata, Node, read_et, write_et


def test_rewriting_the_feeder_trace_reproduces_it_byte_for_byte(
    shared_traces: Path, tmp_path: Path
) -> None:
    source = shared_traces / "chakra" / "feeder_trace.et.gz"
    metadata, nodes = read_et(source)
    out = tmp_path / "chakra.0.et"
    assert write_et(out, metadata, nodes) == 3664
    with gzip.open(source) as f:
        original = f.read()
    assert len(original) == 2_978_371
    assert out.read_bytes() == original


def test_layout_is_metadata_then_size_prefixed_nodes(tmp_path: Path) -> None:
    out = tmp_path / "t.et"
    write_et(out, GlobalMetadata(version="x"), [Node(id=1, name="a"), Node(name="b")])
    # GlobalMetadata: field 1 string "x" = 0a 01 78 (3 bytes); Node(id=1, name="a") =
    # 08 01 12 01 61 (5 bytes); Node(name="b") = 12 01 62 (3 bytes)
    assert out.read_bytes() == (b"\x03\x0a\x01\x78" + b"\x05\x08\x01\x12\x01\x61"
                                + b"\x03\x12\x01\x62")  # fmt: skip


@pytest.mark.parametrize("node", [Node(id=3), Node(), b""], ids=["id-only", "empty", "no-bytes"])
def test_a_node_the_reader_would_refuse_is_not_written(tmp_path: Path, node: object) -> None:
    """Node 0-type and nameless (or empty bytes): EtReader refuses it, so EtWriter does too,
    and the file is not created."""
    out = tmp_path / "refused.et"
    with (
        pytest.raises(
            EtFormatError,
            match=r"refused\.et: cannot write node #2: it has neither"
            r" a name nor a type",
        ),
        EtWriter(out, GlobalMetadata()) as writer,
    ):
        writer.write(Node(id=1, name="fine"))
        writer.write(node)
    assert list(tmp_path.iterdir()) == []


def test_gz_name_writes_reproducible_gzip(tmp_path: Path) -> None:
    nodes = [Node(id=i, name=f"n{i}") for i in range(50)]
    first, second = tmp_path / "a.et.gz", tmp_path / "b.et.gz"
    write_et(first, GlobalMetadata(), nodes)
    write_et(second, GlobalMetadata(), nodes)
    assert first.read_bytes()[:2] == b"\x1f\x8b"
    assert first.read_bytes() == second.read_bytes()
    assert [n.name for n in read_et(first)[1]] == [n.name for n in nodes]


def test_failure_inside_the_block_leaves_no_file_and_keeps_an_old_one(tmp_path: Path) -> None:
    out = tmp_path / "keep.et"
    out.write_bytes(b"old")
    with pytest.raises(RuntimeError), EtWriter(out, GlobalMetadata()) as writer:
        writer.write(Node(id=1, name="n"))
        raise RuntimeError("boom")
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.et"]


def test_file_appears_only_on_close(tmp_path: Path) -> None:
    out = tmp_path / "late.et"
    writer = EtWriter(out, GlobalMetadata())
    writer.write(Node(id=1, name="n"))
    assert not out.exists()
    writer.close()
    assert [n.id for n in read_et(out)[1]] == [1]


def test_abort_discards(tmp_path: Path) -> None:
    writer = EtWriter(tmp_path / "gone.et", GlobalMetadata())
    writer.write(Node(id=1, name="n"))
    writer.abort()
    assert list(tmp_path.iterdir()) == []


def test_missing_folder_is_a_file_access_error(tmp_path: Path) -> None:
    with pytest.raises(FileAccessError, match=r"cannot write .*no_dir/x\.et: No such file"):
        write_et(tmp_path / "no_dir" / "x.et", GlobalMetadata(), [])
