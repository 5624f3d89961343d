"""Resume by content: a rank is reused only when its manifest (rank<r>.report.json) says this
package wrote its outputs, from inputs with the same digests and the same options, and the
outputs on disk still have the digests recorded; file times play no part."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Optional

import pytest

from chakra.link import LinkOptions
from chakra.pipeline import RankFiles, ranks_in_folder, run_pipeline
from chakra.synth import SynthOptions, generate_job
from chakra.synth.options import options_with_vintages

RANKS = 2
OLD = 1_000_000_000  # 2001-09-09: older than any output written now


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two different jobs ("a", "b") with the same file names, each with a fresh run's
    outputs in ``<job>-out``."""
    folders = {}
    for name, seed, ops in (("a", 3, 40), ("b", 4, 90)):
        folder = tmp_path_factory.mktemp(f"job-{name}")
        generate_job(SynthOptions(seed=seed, ranks=RANKS, ops_per_step=ops), folder)
        out = tmp_path_factory.mktemp(f"job-{name}-out")
        run_pipeline(ranks_in_folder(folder), out, plot=False)
        folders[name], folders[f"{name}-out"] = folder, out
    return folders


def makespans(out: Path) -> list[float]:
    report = json.loads((out / "report.json").read_text())
    return [entry["simulation"]["simulated_makespan_us"] for entry in report["ranks"]]


def copy_job(source: Path, target: Path, mtime: Optional[int] = None) -> list[RankFiles]:
    """``source``'s traces copied over ``target``'s (``shutil.copy2``: keeping their times,
    or set to ``mtime``)."""
    target.mkdir(exist_ok=True)
    for path in source.iterdir():
        shutil.copy2(path, target / path.name)
        if mtime is not None:
            os.utime(target / path.name, (mtime, mtime))
    return ranks_in_folder(target)


@pytest.mark.slow
def test_older_dated_replaced_traces_are_recomputed(
    jobs: dict[str, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    traces, out = tmp_path / "traces", tmp_path / "out"
    run_pipeline(copy_job(jobs["a"], traces), out, plot=False)
    assert makespans(out) == makespans(jobs["a-out"])
    ranks = copy_job(jobs["b"], traces, mtime=OLD)  # job B's traces, dated before A's outputs
    with caplog.at_level(logging.INFO, logger="chakra.pipeline.resume"):
        result = run_pipeline(ranks, out, plot=False)
    assert result.reused == []
    assert makespans(out) == makespans(jobs["b-out"]) != makespans(jobs["a-out"])
    assert "rank 0: recomputed (inputs changed)" in caplog.messages
    assert (out / "workload.1.et").read_bytes() == (jobs["b-out"] / "workload.1.et").read_bytes()


def test_unchanged_inputs_are_reused_without_linking_whatever_their_times(
    jobs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    shutil.copytree(jobs["a-out"], out)
    ranks = copy_job(jobs["a"], tmp_path / "traces")
    for files in ranks:  # touched: newer than every output, same bytes
        os.utime(files.host, (OLD * 2, OLD * 2))

    def no_linking(*_: object) -> None:
        raise AssertionError("a reusable rank was linked again")

    monkeypatch.setattr("chakra.pipeline.rank_work.link_files", no_linking)
    assert run_pipeline(ranks, out, plot=False).reused == [0, 1]
    assert makespans(out) == makespans(jobs["a-out"])


@pytest.mark.parametrize("forged", ["workload.0.et", "rank0.et_plus.json"])
def test_forged_outputs_are_recomputed(
    jobs: dict[str, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture, forged: str
) -> None:
    out = tmp_path / "out"
    shutil.copytree(jobs["a-out"], out)
    shutil.copy(jobs["b-out"] / forged, out / forged)  # another job's output, dated now
    with caplog.at_level(logging.INFO, logger="chakra.pipeline.resume"):
        result = run_pipeline(ranks_in_folder(jobs["a"]), out, plot=False)
    assert result.reused == [1]
    assert "rank 0: recomputed (outputs modified)" in caplog.messages
    assert makespans(out) == makespans(jobs["a-out"])


def test_outputs_without_a_manifest_are_recomputed(
    jobs: dict[str, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "out"
    shutil.copytree(jobs["b-out"], out)  # e.g. shipped in an archive beside A's traces
    for rank in range(RANKS):
        (out / f"rank{rank}.report.json").unlink()
    (out / "rank1.report.json").write_text("{not json")
    with caplog.at_level(logging.INFO, logger="chakra.pipeline.resume"):
        result = run_pipeline(ranks_in_folder(jobs["a"]), out, plot=False)
    assert result.reused == []
    assert "rank 0: recomputed (no manifest)" in caplog.messages
    assert "rank 1: recomputed (manifest unreadable)" in caplog.messages
    assert makespans(out) == makespans(jobs["a-out"])


@pytest.mark.slow
def test_other_options_or_version_are_recomputed(
    jobs: dict[str, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "out"
    shutil.copytree(jobs["a-out"], out)
    ranks = ranks_in_folder(jobs["a"])
    manifest = json.loads((out / "rank1.report.json").read_text())
    manifest["chakra_version"] = "0.0.1"
    (out / "rank1.report.json").write_text(json.dumps(manifest))
    with caplog.at_level(logging.INFO, logger="chakra.pipeline.resume"):
        assert run_pipeline(ranks, out, plot=False).reused == [0]
    assert any("rank 1: recomputed (made by chakra 0.0.1" in m for m in caplog.messages)
    caplog.clear()
    other = LinkOptions(allow_pid_mismatch=True)
    with caplog.at_level(logging.INFO, logger="chakra.pipeline.resume"):
        assert run_pipeline(ranks, out, plot=False, options=other).reused == []
    assert "rank 0: recomputed (options differ)" in caplog.messages
    assert run_pipeline(ranks, out, plot=False, options=other).reused == [0, 1]


def test_the_manifest_records_versions_options_and_digests(jobs: dict[str, Path]) -> None:
    out, rank = jobs["a-out"], ranks_in_folder(jobs["a"])[1]
    manifest = json.loads((out / "rank1.report.json").read_text())
    assert manifest["chakra_version"] == "0.1.0"
    assert manifest["options"]["et_prefix"] == "workload"
    assert manifest["entry"]["rank"] == 1
    recorded = manifest["inputs"] + manifest["outputs"]
    files = [rank.host, rank.device, out / "rank1.et_plus.json", out / "workload.1.et"]
    for record, path in zip(recorded, files):  # named by name: the traces are in one folder
        data = Path(path).read_bytes()
        assert record == {"path": Path(path).name, "size": len(data),
                          "sha256": hashlib.sha256(data).hexdigest()}  # fmt: skip


def test_ets_rewritten_by_the_cross_rank_step_are_reused(tmp_path: Path) -> None:
    options = options_with_vintages(SynthOptions(seed=5, ranks=4, steps=1, ops_per_step=40),
                                     ["legacy_1_0_1"])  # fmt: skip
    generate_job(options, tmp_path / "traces")
    ranks, out = ranks_in_folder(tmp_path / "traces"), tmp_path / "out"
    first = run_pipeline(ranks, out, plot=False)
    rewritten = json.loads(first.report.read_text())["agreement"]["ranks_rewritten"]
    assert rewritten  # the legacy job's send/recv ends are filled: its .et files rewritten
    ets = {rank: (out / f"workload.{rank}.et").read_bytes() for rank in range(4)}
    assert run_pipeline(ranks, out, plot=False).reused == [0, 1, 2, 3]
    assert {rank: (out / f"workload.{rank}.et").read_bytes() for rank in range(4)} == ets
