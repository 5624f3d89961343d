"""Many ranks: the serial, process-pool, memory-bounded and Dask paths give identical
outputs, and an interrupted run resumes with only the missing ranks."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

import pytest

from chakra.errors import ChakraError
from chakra.pipeline import RankFiles, run_pipeline
from chakra.pipeline.schedule import (
    PEAK_PER_INPUT_BYTE,
    dask_client,
    estimate_peak_bytes,
    run_bounded,
    uncompressed_size,
)
from chakra.synth import SynthOptions, generate_job

RANKS = 6


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> list[RankFiles]:
    folder = tmp_path_factory.mktemp("traces")
    generate_job(SynthOptions(seed=5, ranks=RANKS, ops_per_step=70, gzip=True), folder)
    from chakra.pipeline import ranks_in_folder

    return ranks_in_folder(folder)


@pytest.fixture(scope="module")
def serial(job: list[RankFiles], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("serial")
    run_pipeline(job, out, plot=False)
    return out


def makespans(out: Path) -> list[float]:
    report = json.loads((out / "report.json").read_text())
    return [entry["simulation"]["simulated_makespan_us"] for entry in report["ranks"]]


def assert_same_outputs(out: Path, expected: Path) -> None:
    for rank in range(RANKS):
        name = f"workload.{rank}.et"
        assert (out / name).read_bytes() == (expected / name).read_bytes(), name
    assert makespans(out) == makespans(expected)


@pytest.mark.parametrize(
    "settings",
    [{"jobs": 2}, {"jobs": 2, "max_memory_gb": 1e-9},
     {"executor": "dask", "scheduler": "local:2"}],
    ids=["jobs2", "tiny-memory-budget", "dask-local-cluster"],
)  # fmt: skip
@pytest.mark.slow
def test_every_executor_gives_the_serial_outputs(
    job: list[RankFiles], serial: Path, tmp_path: Path, settings: dict
) -> None:
    result = run_pipeline(job, tmp_path, plot=False, **settings)
    assert result.reused == []
    assert_same_outputs(tmp_path, serial)


@pytest.mark.slow
def test_an_interrupted_run_redoes_only_the_missing_ranks(
    job: list[RankFiles], serial: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    shutil.copytree(serial, out)  # copies keep their modification times
    for rank in (1, 4):
        (out / f"workload.{rank}.et").unlink()
    before = {r: (out / f"rank{r}.et_plus.json").stat().st_mtime_ns for r in range(RANKS)}
    result = run_pipeline(job, out, jobs=2, plot=False)
    assert result.reused == [0, 2, 3, 5]
    after = {r: (out / f"rank{r}.et_plus.json").stat().st_mtime_ns for r in range(RANKS)}
    assert [r for r in range(RANKS) if after[r] != before[r]] == [1, 4]
    assert_same_outputs(out, serial)
    assert (
        json.loads((out / "report.json").read_text())["ranks"][0]["link"]
        == json.loads((serial / "report.json").read_text())["ranks"][0]["link"]
    )


@pytest.mark.slow
def test_a_changed_input_or_no_resume_redo_a_rank(
    job: list[RankFiles], serial: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    shutil.copytree(serial, out)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    fresh = inputs / job[2].host.name
    shutil.copy(job[2].host, fresh)  # a newer mtime than the outputs, the same bytes
    changed = [RankFiles(f.rank, fresh, f.device) if f.rank == 2 else f for f in job]
    assert run_pipeline(changed, out, plot=False).reused == list(range(RANKS))
    fresh.write_bytes(gzip.compress(gzip.decompress(fresh.read_bytes()), mtime=1))
    assert run_pipeline(changed, out, plot=False).reused == [0, 1, 3, 4, 5]  # other bytes
    assert_same_outputs(out, serial)
    assert run_pipeline(job, out, plot=False, resume=False).reused == []


@pytest.mark.slow
def test_cli_reports_reused_ranks_and_no_resume(
    job: list[RankFiles], serial: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    shutil.copytree(serial, out)
    script = [sys.executable, "-m", "chakra.cli.pipeline"]
    command = [*script, "--trace-dir", str(job[0].host.parent), "--output-dir", str(out),
               "--no-plot", "--max-memory", "0.5"]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert f"reused {RANKS} of {RANKS} ranks" in result.stderr
    result = subprocess.run([*command, "--no-resume"], capture_output=True, text=True,
                            check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "reused" not in result.stderr
    assert_same_outputs(out, serial)


def test_run_bounded_keeps_in_flight_estimates_under_the_budget() -> None:
    estimates = [40, 40, 40, 100, 10, 10, 10]  # the 100 exceeds the budget alone: still runs
    lock = threading.Lock()
    running: list[int] = []
    seen: list[list[int]] = []

    def task(item: int) -> int:
        with lock:
            running.append(item)
            seen.append(sorted(running))
        time.sleep(0.01)
        with lock:
            running.remove(item)
        return item

    def run(budget: int) -> list[int]:
        seen.clear()
        with ThreadPoolExecutor(max_workers=4) as pool:
            return run_bounded(list(range(7)), estimates, lambda i: pool.submit(task, i),
                               wait, max_in_flight=4, budget_bytes=budget)  # fmt: skip

    assert sorted(run(85)) == list(range(7))
    assert all(sum(estimates[i] for i in group) <= 85 or group == [3] for group in seen)
    assert max(len(group) for group in seen) == 3  # the three 10s together
    assert sorted(run(1)) == list(range(7))
    assert max(len(group) for group in seen) == 1


def test_run_bounded_raises_the_first_failure() -> None:
    def task(item: int) -> int:
        if item == 1:
            raise ChakraError("rank 1 failed")
        return item

    with ThreadPoolExecutor(max_workers=2) as pool, pytest.raises(ChakraError, match="rank 1"):
        run_bounded([0, 1, 2], [1, 1, 1], lambda i: pool.submit(task, i), wait,
                    max_in_flight=2)  # fmt: skip


def test_memory_estimate_reads_the_gzip_size_trailer(tmp_path: Path) -> None:
    plain = tmp_path / "a.json"
    plain.write_bytes(b"x" * 1000)
    packed = tmp_path / "b.json.gz"
    packed.write_bytes(gzip.compress(b"y" * 5000))
    assert uncompressed_size(plain) == 1000
    assert uncompressed_size(packed) == 5000 != os.path.getsize(packed)
    assert estimate_peak_bytes((plain, packed)) == PEAK_PER_INPUT_BYTE * 6000


def test_missing_dask_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ChakraError, match=r"pip install 'chakra\[dask\]'"), dask_client("local:1"):
        pass


@pytest.mark.parametrize(
    ("settings", "message"),
    [({"executor": "dask"}, "needs a scheduler"), ({"executor": "mpi"}, "unknown executor"),
     ({"max_memory_gb": 0}, "must be a finite number above 0"),
     ({"max_memory_gb": float("nan")}, "must be a finite number above 0"),
     ({"executor": "dask", "scheduler": "local:x"}, "local:N")],
)  # fmt: skip
def test_bad_execution_settings_are_clear_errors(
    job: list[RankFiles], tmp_path: Path, settings: dict, message: str
) -> None:
    with pytest.raises(ChakraError, match=message):
        run_pipeline(job, tmp_path, plot=False, **settings)
