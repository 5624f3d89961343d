"""AtomicGroup: files that appear together or not at all; symlinks at outputs replaced."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chakra.errors import FileAccessError
from chakra.fileio import AtomicGroup, atomic_output


def test_files_appear_only_when_the_group_commits(tmp_path: Path) -> None:
    with AtomicGroup() as group:
        for name in ("a", "b", "c"):
            with atomic_output(tmp_path / name, text=True, group=group) as out:
                out.write(name)
        assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == []
    assert sorted(p.read_text() for p in tmp_path.iterdir()) == ["a", "b", "c"]


def test_a_failure_discards_every_file(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("old")
    with pytest.raises(RuntimeError), AtomicGroup() as group:
        with atomic_output(tmp_path / "a", group=group) as out:
            out.write(b"new")
        raise RuntimeError("a later file failed")
    assert [(p.name, p.read_text()) for p in tmp_path.iterdir()] == [("a", "old")]


def test_a_failed_move_removes_those_already_moved(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()  # the third file cannot replace a folder
    group = AtomicGroup()
    for name in ("a", "b", "c", "d"):
        group.add(tmp_path / name).stream.write(b"x")
    with pytest.raises(FileAccessError, match=r"cannot write .*c: Is a directory"):
        group.commit()
    assert [p.name for p in tmp_path.iterdir()] == ["c"]


def test_finished_files_do_not_stay_open(tmp_path: Path) -> None:
    group = AtomicGroup()
    member = group.add(tmp_path / "a")
    member.stream.write(b"x")
    member.commit()  # a member's commit only finishes it
    assert member.stream.closed and not (tmp_path / "a").exists()
    group.commit()
    assert (tmp_path / "a").read_bytes() == b"x"


def test_files_handed_over_by_another_writer(tmp_path: Path) -> None:
    owner = AtomicGroup()
    worker = AtomicGroup(owner=owner.owner)
    worker.add(tmp_path / "rank0.json").stream.write(b"0")
    owner.adopt(worker.hand_over())
    worker.discard()  # holds nothing any more
    owner.commit()
    assert (tmp_path / "rank0.json").read_bytes() == b"0"
    assert [p.name for p in tmp_path.iterdir()] == ["rank0.json"]


def test_a_symlink_at_the_output_is_replaced_not_followed(tmp_path: Path) -> None:
    target, link = tmp_path / "target", tmp_path / "out"
    target.write_bytes(b"keep")
    link.symlink_to(target)
    with atomic_output(link) as out:
        out.write(b"new")
    assert target.read_bytes() == b"keep"
    assert not link.is_symlink() and link.read_bytes() == b"new"
    hard = tmp_path / "hard"
    os.link(target, hard)
    with atomic_output(hard) as out:
        out.write(b"other")
    assert target.read_bytes() == b"keep" and hard.read_bytes() == b"other"
