"""Atomic outputs and gzip-by-content inputs."""

from __future__ import annotations

import gzip
import os
import stat
from pathlib import Path

import pytest

from chakra.errors import FileAccessError
from chakra.fileio import atomic_output, open_binary_input


def test_text_output_commits_on_success(tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    with atomic_output(out, text=True) as stream:
        stream.write("héllo\n")
        assert not out.exists()
    assert out.read_text(encoding="utf-8") == "héllo\n"
    assert list(tmp_path.iterdir()) == [out]


def test_permissions_follow_the_umask_not_mkstemp(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        with atomic_output(tmp_path / "p.bin") as stream:
            stream.write(b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "p.bin").stat().st_mode) == 0o644


def test_os_error_while_writing_discards_and_is_reported(tmp_path: Path) -> None:
    out = tmp_path / "b.bin"
    with (
        pytest.raises(FileAccessError, match=r"cannot write .*b\.bin: No space left"),
        atomic_output(out) as stream,
    ):
        stream.write(b"partial")
        raise OSError(28, "No space left on device")
    assert list(tmp_path.iterdir()) == []


def test_gz_suffix_compresses(tmp_path: Path) -> None:
    out = tmp_path / "c.json.gz"
    with atomic_output(out, text=True) as stream:
        stream.write("{}")
    assert gzip.decompress(out.read_bytes()) == b"{}"


def test_input_gzip_is_detected_by_magic(tmp_path: Path) -> None:
    packed, plain = tmp_path / "x.bin", tmp_path / "y.gz"
    packed.write_bytes(gzip.compress(b"inside"))
    plain.write_bytes(b"plain bytes")
    opened = open_binary_input(packed)
    stream, is_gzip = opened.stream, opened.is_gzip
    with stream:
        assert (stream.read(), is_gzip) == (b"inside", True)
    opened = open_binary_input(plain)
    stream, is_gzip = opened.stream, opened.is_gzip
    with stream:
        assert (stream.read(), is_gzip) == (b"plain bytes", False)


def test_directory_as_input_is_a_file_access_error(tmp_path: Path) -> None:
    with pytest.raises(FileAccessError, match="cannot open"):
        open_binary_input(tmp_path)
