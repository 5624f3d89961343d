"""A fresh output folder is removed when the run fails; an existing one is kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra.pipeline.fresh import output_folder


def test_fresh_folder_and_parents_removed_on_failure(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "b"
    with pytest.raises(RuntimeError), output_folder(folder):
        (folder / "rank0.et").write_text("x")
        raise RuntimeError("rank 1 failed")
    assert list(tmp_path.iterdir()) == []


def test_existing_folder_kept_on_failure(tmp_path: Path) -> None:
    (tmp_path / "old").write_text("y")
    with pytest.raises(RuntimeError), output_folder(tmp_path):
        (tmp_path / "rank0.et").write_text("x")
        raise RuntimeError("rank 1 failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old", "rank0.et"]


def test_fresh_folder_kept_on_success(tmp_path: Path) -> None:
    with output_folder(tmp_path / "run"):
        (tmp_path / "run" / "report.json").write_text("{}")
    assert (tmp_path / "run" / "report.json").exists()
