"""Content digests of local files and URLs: SHA-256 of the bytes as stored, streamed."""

from __future__ import annotations

import gzip
import hashlib
import uuid
from pathlib import Path

import pytest

from chakra.errors import FileAccessError
from chakra.fileio.digest import CHUNK_BYTES, FileDigest, file_digest, file_size


def test_local_digest_streams_the_stored_bytes(tmp_path: Path) -> None:
    data = gzip.compress(b"x" * (3 * CHUNK_BYTES + 5))  # gzip: digested as stored
    path = tmp_path / "a.json.gz"
    path.write_bytes(data)
    digest = file_digest(path)
    assert digest == FileDigest(str(path), len(data), hashlib.sha256(data).hexdigest())
    assert file_size(path) == len(data)
    moved = tmp_path / "b.json.gz"
    path.rename(moved)
    assert file_digest(moved).same_content(digest) and file_digest(moved) != digest


def test_url_digest_reads_through_fsspec() -> None:
    fsspec = pytest.importorskip("fsspec")
    url = f"memory://digest-{uuid.uuid4().hex[:8]}/a.bin"
    data = bytes(range(256)) * 5000
    fsspec.filesystem("memory").pipe(url, data)
    assert file_digest(url) == FileDigest(url, len(data), hashlib.sha256(data).hexdigest())
    assert file_size(url) == len(data)


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    for measure in (file_digest, file_size):
        with pytest.raises(FileAccessError, match=r"^cannot read .*gone: No such file"):
            measure(tmp_path / "gone")
