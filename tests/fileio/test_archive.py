"""Safe extraction of hostile archives, with tarfile's extraction filters made unavailable
(as on Pythons without them) and with them present: every hostile member is refused with one
line naming the archive and member, nothing is written outside the target, and the target
is removed."""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

import pytest

from chakra.errors import ArchiveError
from chakra.fileio.archive import ExtractLimits, extract_archive

GiB = 1 << 30


@pytest.fixture(autouse=True, params=["without-filters", "with-filters"])
def filters(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Without filters: no ``tarfile.data_filter``, and ``extract``/``extractall`` raise
    TypeError on ``filter=`` as Pythons before 3.12 (and before 3.11.4...) do."""
    if request.param == "without-filters":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
        for name in ("extractall", "extract"):
            original = getattr(tarfile.TarFile, name)

            def refuse(self: tarfile.TarFile, *args: object, _original=original, **kwargs):
                if "filter" in kwargs:
                    raise TypeError("unexpected keyword argument 'filter'")
                return _original(self, *args, **kwargs)

            monkeypatch.setattr(tarfile.TarFile, name, refuse)
    elif not hasattr(tarfile, "data_filter"):
        pytest.skip("this Python has no tarfile extraction filters")
    yield request.param


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the target that must stay as it is: one file, ``victim.txt``."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "victim.txt").write_text("original")
    return folder


def member(name: str, data: bytes = b"", **fields: object) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for key, value in fields.items():
        setattr(info, key, value)
    return info, data


def build(path: Path, members: list[tuple[tarfile.TarInfo, bytes]], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode, format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def refused(
    archive: Path, target: Path, outside: Path, expected: str,
    limits: Optional[ExtractLimits] = None,
) -> None:  # fmt: skip
    """Extraction raises one line naming the archive with ``expected``; nothing is left."""
    with pytest.raises(ArchiveError) as info:
        extract_archive(archive, target, limits or ExtractLimits())
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{archive}: "), message
    assert expected in message, message
    assert not target.exists()
    assert [p.name for p in outside.iterdir()] == ["victim.txt"]
    assert (outside / "victim.txt").read_text() == "original"
    assert not (outside / "victim.txt").is_symlink()


def test_a_plain_bundle_is_extracted(tmp_path: Path) -> None:
    archive = build(tmp_path / "ok.tgz", [
        member("traces", type=tarfile.DIRTYPE, mode=0o777),
        member("traces/./kineto_0.json", b"{}" * 1000),
        member("traces/sub/run.sh", b"#!/bin/sh\n", mode=0o777),
        member("./top.json", b"[]"),
    ])  # fmt: skip
    result = extract_archive(archive, tmp_path / "deep" / "out")
    root = tmp_path / "deep" / "out"
    assert (result.root, result.files, result.folders, result.total_bytes) == (root, 3, 1, 2012)
    assert (root / "traces" / "kineto_0.json").read_bytes() == b"{}" * 1000
    assert stat.S_IMODE((root / "traces" / "sub" / "run.sh").stat().st_mode) & 0o111
    assert not stat.S_IMODE((root / "traces").stat().st_mode) & 0o002  # not world-writable
    assert (root / "top.json").read_bytes() == b"[]"


@pytest.mark.parametrize("mode", ["w", "w:bz2", "w:xz"])
def test_other_compressions_are_extracted(tmp_path: Path, mode: str) -> None:
    archive = build(tmp_path / "ok.tar", [member("a/b.json", b"x" * 5000)], mode)
    extract_archive(archive, tmp_path / "out")
    assert (tmp_path / "out" / "a" / "b.json").read_bytes() == b"x" * 5000


def test_parent_path_is_refused(tmp_path: Path, outside: Path) -> None:
    archive = build(tmp_path / "a.tgz", [member("ok.json", b"{}"),
                                         member("../outside/escape.txt", b"x")])  # fmt: skip
    refused(archive, tmp_path / "target", outside, "member '../outside/escape.txt': a path "
            "leaving the folder")  # fmt: skip


def test_absolute_path_is_refused(tmp_path: Path, outside: Path) -> None:
    name = str(outside / "absolute.txt")
    archive = build(tmp_path / "a.tgz", [member(name, b"x")])
    refused(archive, tmp_path / "target", outside, f"member {name!r}: an absolute path")


def test_symlink_and_writing_through_it_are_refused(tmp_path: Path, outside: Path) -> None:
    archive = build(tmp_path / "a.tgz", [
        member("link", type=tarfile.SYMTYPE, linkname=str(outside)),
        member("link/through.txt", b"x"),
    ])  # fmt: skip
    refused(archive, tmp_path / "target", outside, "member 'link': a symbolic link")


def test_hard_link_overwriting_an_outside_file_is_refused(tmp_path: Path, outside: Path) -> None:
    archive = build(tmp_path / "a.tgz", [
        member("victim", type=tarfile.LNKTYPE, linkname=str(outside / "victim.txt")),
        member("victim", b"overwritten"),
    ])  # fmt: skip
    refused(archive, tmp_path / "target", outside, "member 'victim': a hard link")


@pytest.mark.parametrize(("kind", "what"), [(tarfile.CHRTYPE, "a character device"),
                                            (tarfile.BLKTYPE, "a block device")])  # fmt: skip
def test_device_is_refused(tmp_path: Path, outside: Path, kind: bytes, what: str) -> None:
    archive = build(tmp_path / "a.tgz", [member("dev", type=kind, devmajor=1, devminor=3)])
    refused(archive, tmp_path / "target", outside, f"member 'dev': {what}")


def test_fifo_is_refused(tmp_path: Path, outside: Path) -> None:
    archive = build(tmp_path / "a.tgz", [member("pipe", type=tarfile.FIFOTYPE)])
    refused(archive, tmp_path / "target", outside, "member 'pipe': a FIFO")


@pytest.mark.parametrize("bits", [stat.S_ISUID, stat.S_ISGID])
def test_setuid_is_refused(tmp_path: Path, outside: Path, bits: int) -> None:
    archive = build(tmp_path / "a.tgz", [member("tool", b"\x7fELF", mode=0o755 | bits)])
    refused(archive, tmp_path / "target", outside, "member 'tool': a set-user-ID or set-group-ID")


def test_symlinked_output_folder_is_refused(tmp_path: Path, outside: Path) -> None:
    archive = build(tmp_path / "a.tgz", [
        member("traces/kineto_0.json", b"{}"),
        member("traces/chakra_pipeline_out", type=tarfile.SYMTYPE, linkname=str(outside)),
    ])  # fmt: skip
    refused(archive, tmp_path / "target", outside, "'traces/chakra_pipeline_out': a symbolic")


def test_oversized_member_is_refused(tmp_path: Path, outside: Path) -> None:
    archive = build(tmp_path / "a.tgz", [member("big.json", bytes(64 * 1024))])
    assert archive.stat().st_size < 1024  # zeros compress: a bomb in miniature
    refused(archive, tmp_path / "target", outside, "member 'big.json': 64.0 KiB, over the "
            "limit of 4.0 KiB a member", ExtractLimits(max_member_bytes=4096))  # fmt: skip


def test_a_6_gib_member_of_a_tiny_archive_is_refused_by_default(
    tmp_path: Path, outside: Path
) -> None:
    header = member("huge.bin")[0]
    header.size = 6 * GiB  # the header alone: refused before any of its data is read
    archive = tmp_path / "bomb.tgz"
    archive.write_bytes(gzip.compress(header.tobuf(format=tarfile.PAX_FORMAT)))
    refused(archive, tmp_path / "target", outside, "6.0 GiB, over the limit of 4.0 GiB")


def test_total_size_and_member_count_limits(tmp_path: Path, outside: Path) -> None:
    archive = build(tmp_path / "a.tgz", [member(f"f{i}", bytes(1000)) for i in range(5)])
    refused(archive, tmp_path / "t1", outside, "more than 3.9 KiB in all",
            ExtractLimits(max_total_bytes=4000))  # fmt: skip
    refused(archive, tmp_path / "t2", outside, "more than 4 members",
            ExtractLimits(max_members=4))  # fmt: skip


def test_oversized_extended_header_is_refused(tmp_path: Path, outside: Path) -> None:
    info, data = member("a.json", b"{}")
    info.pax_headers = {"comment": "x" * (2 << 20)}
    archive = build(tmp_path / "a.tgz", [(info, data)])
    refused(archive, tmp_path / "target", outside, "an extended header of 2.0 MiB")


def test_duplicate_member_is_refused(tmp_path: Path, outside: Path) -> None:
    archive = build(tmp_path / "a.tgz", [member("a.json", b"1"), member("./a.json", b"2")])
    refused(archive, tmp_path / "target", outside, "member './a.json': appears twice")


def test_an_existing_target_is_refused_and_kept(tmp_path: Path, outside: Path) -> None:
    archive = build(tmp_path / "a.tgz", [member("a.json", b"1")])
    with pytest.raises(ArchiveError, match="it exists already"):
        extract_archive(archive, outside)
    assert (outside / "victim.txt").read_text() == "original"


def test_truncated_archive_is_one_line(tmp_path: Path, outside: Path) -> None:
    whole = build(tmp_path / "a.tgz", [member("a.json", os.urandom(200_000))]).read_bytes()
    cut = tmp_path / "cut.tgz"
    cut.write_bytes(whole[: len(whole) // 2])
    refused(cut, tmp_path / "target", outside, "truncated")
    cut.write_bytes(whole[:-4])  # only the gzip trailer's size field missing
    refused(cut, tmp_path / "target", outside, "truncated or corrupt")


def test_nul_byte_in_a_pax_path_is_one_line(tmp_path: Path, outside: Path) -> None:
    info, data = member("a.json", b"z")
    info.pax_headers = {"path": "dir/aaaa.json"}
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(info, io.BytesIO(data))
    body = raw.getvalue().replace(b"path=dir/a", b"path=dir/\0", 1)
    archive = tmp_path / "nul.tgz"
    archive.write_bytes(gzip.compress(body))
    refused(archive, tmp_path / "target", outside, "member 'dir/\\x00aaa.json': a NUL byte")


def test_not_an_archive_is_one_line(tmp_path: Path, outside: Path) -> None:
    archive = tmp_path / "text.tgz"
    archive.write_text("hello, not a tar\n" * 100)
    refused(archive, tmp_path / "target", outside, "not a tar archive")
    refused(tmp_path / "missing.tgz", tmp_path / "target", outside,
            "cannot read it: No such file or directory")  # fmt: skip


def test_a_3_gib_member_of_a_tiny_archive_is_refused_by_its_ratio_regression(
    tmp_path: Path, outside: Path
) -> None:
    """Reported: a 3 MB archive holding a 3 GiB member (under the 4 GiB a member) was
    extracted whole. Refused on its header, before any of its bytes is written."""
    header = member("traces/kineto_0.json")[0]
    header.size = 3 * GiB
    archive = tmp_path / "bomb.tgz"
    archive.write_bytes(gzip.compress(header.tobuf(format=tarfile.PAX_FORMAT)))
    refused(archive, tmp_path / "target", outside, "member 'traces/kineto_0.json' takes what "
            "it holds to 3.0 GiB, over 200 times the archive's")  # fmt: skip


def test_the_ratio_counts_beyond_its_floor_and_names_the_option(
    tmp_path: Path, outside: Path
) -> None:
    archive = build(tmp_path / "a.tgz", [member("a.json", b"{}" * 50_000)])  # 100 KB
    limits = ExtractLimits(max_ratio=10, ratio_floor_bytes=1000, options={"max_ratio": "--r"})
    refused(archive, tmp_path / "t1", outside, "over 10 times the archive's", limits)
    refused(archive, tmp_path / "t2", outside, "compression ratio, --r raises it", limits)
    assert extract_archive(archive, tmp_path / "t3", ExtractLimits(max_ratio=10)).files == 1
    assert extract_archive(archive, tmp_path / "t4", ExtractLimits(max_ratio=1e6,
                           ratio_floor_bytes=0)).files == 1  # fmt: skip
