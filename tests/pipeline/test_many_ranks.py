"""A 64-rank job: serial, two worker processes and a 2-worker Dask cluster give identical
outputs, and a batch killed halfway finishes only its missing ranks when rerun."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chakra.pipeline import ranks_in_folder, run_pipeline
from chakra.synth import SynthOptions, generate_job

RANKS = 64
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("traces64")
    generate_job(SynthOptions(seed=2, ranks=RANKS, steps=1, ops_per_step=63), folder)
    return folder


@pytest.fixture(scope="module")
def serial(traces: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("serial64")
    run_pipeline(ranks_in_folder(traces), out, plot=False)
    return out


def same_outputs(out: Path, expected: Path) -> None:
    for rank in range(RANKS):
        name = f"workload.{rank}.et"
        assert (out / name).read_bytes() == (expected / name).read_bytes(), name
    spans = [
        [r["simulation"]["simulated_makespan_us"] for r in json.loads(
            (folder / "report.json").read_text())["ranks"]]
        for folder in (out, expected)
    ]  # fmt: skip
    assert spans[0] == spans[1]


@pytest.mark.parametrize("how", ["processes", "dask"])
def test_parallel_paths_equal_the_serial_run(traces: Path, serial: Path, tmp_path: Path,
                                             how: str) -> None:  # fmt: skip
    ranks = ranks_in_folder(traces)
    if how == "processes":
        run_pipeline(ranks, tmp_path, jobs=2, plot=False)
    else:
        run_pipeline(ranks, tmp_path, plot=False, executor="dask", scheduler="local:2")
    same_outputs(tmp_path, serial)


def test_killed_batch_finishes_only_the_missing_ranks(traces: Path, serial: Path,
                                                      tmp_path: Path) -> None:  # fmt: skip
    script = [sys.executable, "-m", "chakra.cli.pipeline"]
    command = [*script, "--trace-dir", str(traces), "--output-dir", str(tmp_path),
               "-j", "2", "--no-plot"]  # fmt: skip
    # its own process group, so that the kill takes its worker processes down with it
    batch = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("rank*.report.json"))) < RANKS // 2:
        assert batch.poll() is None and time.monotonic() < deadline, "batch ended too early"
        time.sleep(0.05)
    os.killpg(batch.pid, signal.SIGKILL)
    batch.wait()
    gone = time.monotonic() + 10
    while time.monotonic() < gone:  # until no process of the group is left
        try:
            os.killpg(batch.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    finished = {p.name.split(".")[0] for p in tmp_path.glob("rank*.report.json")}
    assert RANKS // 2 <= len(finished) < RANKS
    result = run_pipeline(ranks_in_folder(traces), tmp_path, jobs=2, plot=False)
    reused = {f"rank{r}" for r in result.reused}
    assert reused == finished, (sorted(reused - finished), sorted(finished - reused))
    same_outputs(tmp_path, serial)
