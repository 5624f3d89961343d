"""A fresh output folder keeps only the finished work when the run fails (nothing: it is
removed); an existing one is kept whole; an error after the .et family names its step."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra.errors import ChakraError, SimulationError, TraceFormatError, UsageError
from chakra.pipeline.fresh import FinishedWork, job_step, output_folder


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


def _finished_rank_0(folder: Path) -> FinishedWork:
    return FinishedWork(frozenset({"rank0.et", "rank0.report.json"}), "rank 0")


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_fresh_folder_keeps_the_finished_work_only(tmp_path: Path, error: type) -> None:
    folder = tmp_path / "a" / "b"
    with pytest.raises(error), output_folder(folder, _finished_rank_0):
        for name in ("rank0.et", "rank0.report.json", "rank1.et", ".rank1.et.x.partial"):
            (folder / name).write_text("x")
        (folder / "scratch").mkdir()
        raise error()
    assert sorted(p.name for p in folder.iterdir()) == ["rank0.et", "rank0.report.json"]


def test_existing_folder_is_left_whole_whatever_is_finished(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), output_folder(tmp_path, _finished_rank_0):
        (tmp_path / "rank1.et").write_text("x")
        raise RuntimeError("rank 1 failed")
    assert [p.name for p in tmp_path.iterdir()] == ["rank1.et"]


def test_a_step_error_names_the_step_and_keeps_its_class(tmp_path: Path) -> None:
    with pytest.raises(SimulationError) as caught, job_step("simulating the job", tmp_path):
        raise SimulationError("deadlock: communication #2 of group '1'")
    assert str(caught.value) == (
        f"simulating the job: deadlock: communication #2 of group '1' (the ET+ and .et files "
        f"are in {tmp_path})"
    )
    with pytest.raises(ChakraError) as caught, job_step("writing", tmp_path):
        raise TraceFormatError(tmp_path / "x.json", "not JSON", 12)  # a class with fields
    assert str(caught.value).startswith(f"writing: {tmp_path / 'x.json'}")
    with pytest.raises(UsageError, match=r"^--what-if x$"), job_step("writing", tmp_path):
        raise UsageError("--what-if x")
