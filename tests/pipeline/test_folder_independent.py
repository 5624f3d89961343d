"""The same job written to two output folders is the same, byte for byte, in every file: the
outputs name the job's files by name (:mod:`chakra.pipeline.naming`), never by the output
folder's path or name; and a folder moved elsewhere still resumes."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pytest

from chakra.cli.pipeline import main as pipeline_main
from chakra.errors import FileAccessError
from chakra.pipeline import ranks_in_folder, run_pipeline
from chakra.pipeline.naming import input_labels
from chakra.synth import SynthOptions, generate_job


def pipeline(*args: object) -> None:
    with pytest.raises(SystemExit) as exited:
        pipeline_main(["--log-level", "WARNING", *(str(arg) for arg in args)])
    assert exited.value.code == 0


def files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def test_two_output_folders_hold_the_same_bytes_regression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Reported: report.json and rank<r>.report.json held the folder's path, report.html
    its name."""
    generate_job(SynthOptions(seed=5, ranks=2, steps=1, ops_per_step=20), tmp_path / "traces")
    monkeypatch.chdir(tmp_path)
    first, second = Path("out-a"), tmp_path / "deeper" / "out-b"
    pipeline("--trace-dir", "traces", "--output-dir", first, "-j", "1")
    pipeline("--trace-dir", "traces", "--output-dir", second, "-j", "1")
    written = files(first)
    expected = {"report.json", "report.html", "rank0.report.json", "rank1.report.json",
                "timeline.json", "utilisation.png", "workload.comm_groups.json"}  # fmt: skip
    assert expected <= set(written)
    assert written == files(second)
    for text in (written["report.json"], written["rank0.report.json"], written["report.html"]):
        assert b"out-a" not in text and str(tmp_path).encode() not in text
    moved = tmp_path / "moved"
    shutil.move(str(second), moved)
    with caplog.at_level(logging.INFO, logger="chakra"):
        pipeline("--trace-dir", tmp_path / "traces", "--output-dir", moved, "-j", "1")
    assert "reusing 2 of 2 ranks" in caplog.text
    assert files(moved) == written


@pytest.mark.parametrize(
    ("paths", "labels"),
    [
        ([Path("t/r0.host.json"), Path("t/r0.kineto.json")], ["r0.host.json", "r0.kineto.json"]),
        ([Path("/j/hosts/r0.json"), Path("/j/kin/r0.json")], ["hosts/r0.json", "kin/r0.json"]),
        (["s3://b/job/r0.json", "s3://b/job/k/r0.json"], ["r0.json", "k/r0.json"]),
        (["s3://b/job/r0.json", "gs://b/job/r0.json"], ["s3://b/job/r0.json", "gs://b/job/r0.json"]),
        ([Path("/j/r0.json"), "s3://b/r0.json"], ["/j/r0.json", "s3://b/r0.json"]),
    ],
)  # fmt: skip
def test_inputs_are_named_relative_to_the_folder_holding_them_all(
    paths: list, labels: list[str]
) -> None:
    assert input_labels(paths) == labels


def test_the_job_files_appear_together_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last rename (report.html) fails: report.json, timeline.json and the plot written
    before it are removed again; the ranks' files stay to resume from, and the comm-group
    file, committed with the .et family before the simulation."""
    generate_job(SynthOptions(seed=5, ranks=2, steps=1, ops_per_step=20), tmp_path / "traces")
    out = tmp_path / "out"
    out.mkdir()
    real = os.replace

    def replace(source: object, target: object) -> None:
        if str(target).endswith("report.html"):
            raise OSError(5, "Input/output error")
        real(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(FileAccessError, match="Input/output error"):
        run_pipeline(ranks_in_folder(tmp_path / "traces"), out, what_if=[])
    assert sorted(path.name for path in out.iterdir()) == [
        "rank0.et_plus.json", "rank0.report.json", "rank1.et_plus.json", "rank1.report.json",
        "workload.0.et", "workload.1.et", "workload.comm_groups.json",
    ]  # fmt: skip
