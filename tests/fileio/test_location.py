"""Locations: URLs read and written through fsspec (here its in-memory file system), local
paths as before and without importing fsspec."""

from __future__ import annotations

import gzip
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from chakra.errors import ChakraError, FileAccessError
from chakra.fileio import atomic_output, open_binary_input, read_input
from chakra.fileio.location import (
    is_url,
    join,
    list_folder,
    location,
    missing,
    modified_ns,
    name_of,
    url_filesystem,
)

fsspec = pytest.importorskip("fsspec")


@pytest.fixture
def root() -> Iterator[str]:
    """A fresh folder on fsspec's in-memory file system (shared by the whole process)."""
    url = f"memory://chakra-test-{uuid.uuid4().hex[:8]}"
    fs = fsspec.filesystem("memory")
    fs.makedirs(url, exist_ok=True)
    yield url
    fs.rm(url, recursive=True)


def test_what_is_a_url() -> None:
    assert is_url("s3://bucket/job/") and is_url("simplecache::s3://b/k") and is_url("file:///x")
    assert not is_url("traces/rank0.json") and not is_url(Path("/a://b")) and not is_url("C:\\x")
    assert location("memory://a/b") == "memory://a/b" and location("a/b") == Path("a/b")
    assert join("s3://b/job/", "rank0.et") == "s3://b/job/rank0.et"
    assert join(Path("job"), "rank0.et") == Path("job/rank0.et")
    assert name_of("s3://b/job/rank0.et") == "rank0.et" == name_of(Path("job/rank0.et"))


def test_read_plain_and_gzip_urls(root: str) -> None:
    fs = fsspec.filesystem("memory")
    fs.pipe(f"{root}/a.json", b'{"a": 1}')
    fs.pipe(f"{root}/b.json.gz", gzip.compress(b'{"b": 2}') + gzip.compress(b" "))
    assert read_input(f"{root}/a.json") == b'{"a": 1}'
    assert read_input(f"{root}/b.json.gz") == b'{"b": 2} '
    assert read_input(f"{root}/b.json.gz", 4) == b'{"b"'
    opened = open_binary_input(f"{root}/b.json.gz")
    stream, is_gzip = opened.stream, opened.is_gzip
    with stream:
        assert is_gzip and stream.read() == b'{"b": 2} '


def test_a_missing_url_is_one_line_naming_it(root: str) -> None:
    with pytest.raises(FileAccessError) as info:
        read_input(f"{root}/nope.json")
    assert str(info.value) == f"cannot open {root}/nope.json: No such file or directory"
    with pytest.raises(FileAccessError, match=f"cannot list {root}/none: No such file"):
        list_folder(f"{root}/none")
    assert missing([f"{root}/nope.json", Path("/no/such/file")]) == [
        f"{root}/nope.json",
        Path("/no/such/file"),
    ]


def test_atomic_output_to_a_url_appears_only_on_commit(root: str) -> None:
    fs = fsspec.filesystem("memory")
    target = f"{root}/out/x.json.gz"
    fs.makedirs(f"{root}/out", exist_ok=True)
    with atomic_output(target, text=True) as out:
        out.write("hello")
        assert not fs.exists(target)
    assert gzip.decompress(fs.cat(target)) == b"hello"
    assert [name_of(p) for p in list_folder(f"{root}/out")] == ["x.json.gz"]
    with pytest.raises(RuntimeError), atomic_output(target) as out:
        out.write(b"partial")
        raise RuntimeError("stop")
    assert gzip.decompress(fs.cat(target)) == b"hello"  # the old content stays
    assert [name_of(p) for p in list_folder(f"{root}/out")] == ["x.json.gz"]  # no temporary


def test_modification_times_of_urls(root: str) -> None:
    fs = fsspec.filesystem("memory")
    fs.pipe(f"{root}/old", b"1")
    fs.pipe(f"{root}/new", b"2")
    old, new = modified_ns(f"{root}/old"), modified_ns(f"{root}/new")
    assert old is not None and new is not None and old <= new
    with pytest.raises(FileNotFoundError):
        modified_ns(f"{root}/gone")


def test_an_unknown_protocol_is_one_line() -> None:
    with pytest.raises(ChakraError, match="nosuchproto://x: ") as info:
        url_filesystem("nosuchproto://x")
    assert "\n" not in str(info.value)


def test_local_paths_do_not_import_fsspec(tmp_path: Path) -> None:
    script = (
        "import sys; from pathlib import Path\n"
        "from chakra.fileio import atomic_output, read_input\n"
        "import chakra.pipeline, chakra.cli.pipeline\n"
        f"p = Path({str(tmp_path)!r}) / 'x.json.gz'\n"
        "with atomic_output(p) as out: out.write(b'{}')\n"
        "assert read_input(p) == b'{}'\n"
        "assert 'fsspec' not in sys.modules, 'fsspec imported'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def test_writing_into_a_missing_url_folder_names_the_target(tmp_path: Path) -> None:
    target = f"file://{tmp_path}/no/such/folder/x.json"
    with pytest.raises(FileAccessError) as info, atomic_output(target) as out:
        out.write(b"x")
    assert str(info.value) == f"cannot write {target}: No such file or directory"
    assert list(tmp_path.iterdir()) == []
