"""``chakra_converter PyTorch`` writes ``PREFIX.<r>.et`` and ``PREFIX.comm_groups.json``
together or not at all, and refuses a group file left by another job instead of merging it
(:mod:`chakra.convert.group_file`); ranks of one job converted one at a time still share
one file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from chakra.errors import FileAccessError
from chakra.link.batch import link_files
from chakra.link.linked_trace import LinkOptions
from chakra.synth import SynthOptions, generate_job
from tests.cli.conftest import Outcome, Runner


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The ET+ of ranks 0 and 2 of a 4-rank job: rank 0 names the world (group 1) and its
    pair 0, 1 (group 2), rank 2 the world and its pair 2, 3 (group 3)."""
    folder = tmp_path_factory.mktemp("groups")
    summary = generate_job(SynthOptions(seed=3, ranks=4, ops_per_step=40), folder)
    paths = []
    for rank in (0, 2):
        files = summary.ranks[rank]
        et_plus = folder / f"rank{rank}.et_plus.json"
        link_files(files.host_et, files.kineto, et_plus, LinkOptions())
        paths.append(et_plus)
    return paths


def convert(cli: Runner, et_plus: Path, output: Path) -> Outcome:
    return cli("converter", "--log-level", "ERROR", "PyTorch", "--input", et_plus,
               "--output", output)  # fmt: skip


def test_ranks_converted_one_at_a_time_merge_into_one_file(
    cli: Runner, job: list[Path], tmp_path: Path
) -> None:
    for rank, et_plus in zip((0, 2), job):
        assert convert(cli, et_plus, tmp_path / f"job.{rank}.et").status == 0
    groups = json.loads((tmp_path / "job.comm_groups.json").read_text())
    assert groups == {"1": [0, 1, 2, 3], "2": [0, 1], "3": [2, 3]}
    # converting a rank again (same job) keeps the file as it is
    assert convert(cli, job[0], tmp_path / "job.0.et").status == 0
    assert json.loads((tmp_path / "job.comm_groups.json").read_text()) == groups


def test_a_group_file_of_another_job_is_refused_and_nothing_written(
    cli: Runner, job: list[Path], tmp_path: Path
) -> None:
    """Reported: a stale file was merged, so the world group silently grew to 4 ranks."""
    stale = '{\n "1": [0, 1],\n "2": [0, 1]\n}\n'  # a 2-rank job's
    (tmp_path / "job.comm_groups.json").write_text(stale)
    line = convert(cli, job[0], tmp_path / "job.0.et").one_line(1)
    assert line.endswith(
        f"{tmp_path / 'job.comm_groups.json'}: group 1 lists ranks [0, 1] but {job[0]} "
        "names its members [0, 1, 2, 3]: the file was written for another job (remove it, or "
        "convert into another output prefix); nothing written"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.comm_groups.json"]
    assert (tmp_path / "job.comm_groups.json").read_text() == stale


def test_a_non_json_file_at_the_group_path_leaves_no_et(
    cli: Runner, job: list[Path], tmp_path: Path
) -> None:
    """Reported: the .et was committed before the group file was found unreadable."""
    (tmp_path / "job.comm_groups.json").write_text("not json")
    line = convert(cli, job[0], tmp_path / "job.0.et").one_line(1)
    assert "job.comm_groups.json: not a comm-group JSON file" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.comm_groups.json"]


def test_a_failing_group_write_leaves_no_et(
    cli: Runner, job: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The group file's write fails (a full disk): the .et does not appear either."""
    import chakra.convert.group_file as tool  # the converter imports it as it runs

    def full_disk(*_: Any, **__: Any) -> None:
        raise FileAccessError(f"cannot write {tmp_path / 'job.comm_groups.json'}: No space left")

    monkeypatch.setattr(tool, "write_comm_groups", full_disk)
    convert(cli, job[0], tmp_path / "job.0.et").one_line(1, "No space left")
    assert list(tmp_path.iterdir()) == []


def test_a_failing_group_rename_removes_the_et_already_moved(
    cli: Runner, job: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last step, renaming the group file into place, fails after the .et's rename:
    the .et is removed again, and no temporary is left."""
    real = os.replace

    def failing_for_groups(source: Any, target: Any) -> None:
        if str(target).endswith(".comm_groups.json"):
            raise OSError(5, "Input/output error")
        real(source, target)

    monkeypatch.setattr(os, "replace", failing_for_groups)
    convert(cli, job[0], tmp_path / "job.0.et").one_line(1, "Input/output error")
    assert list(tmp_path.iterdir()) == []
