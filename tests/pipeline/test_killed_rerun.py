"""A pipeline killed at any moment (SIGKILL of its whole process group, workers included)
and run again into the same folder ends with the same bytes as a run never interrupted,
and leaves no temporary file behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import chakra
from chakra.synth import SynthOptions, generate_job

pytestmark = pytest.mark.slow

SRC = str(Path(chakra.__file__).resolve().parents[1])


def _command(traces: Path, jobs: int) -> list[str]:
    """The pipeline into ``out`` of the working folder (the reports name their outputs by
    the path given, so every run here writes into a folder of the same relative name)."""
    return [sys.executable, "-m", "chakra.cli.pipeline", "--trace-dir", str(traces),
            "--output-dir", "out", "--no-plot", "-j", str(jobs)]  # fmt: skip


def _run(traces: Path, work: Path, jobs: int = 1) -> None:
    env = {**os.environ, "PYTHONPATH": SRC}
    subprocess.run(_command(traces, jobs), env=env, check=True, capture_output=True, cwd=work)


def _contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes], float]:
    """A 2-rank synthetic job, the outputs of an uninterrupted run into ``work/out`` and
    how long that run took (s)."""
    traces = tmp_path_factory.mktemp("traces")
    generate_job(SynthOptions(seed=5, ranks=2, ops_per_step=120), traces)
    work = tmp_path_factory.mktemp("reference")
    began = time.monotonic()
    _run(traces, work)
    return traces, _contents(work / "out"), time.monotonic() - began


@pytest.mark.parametrize("fraction", [0.3, 0.5, 0.7])
def test_a_killed_run_then_a_rerun_gives_the_same_bytes(
    job: tuple[Path, dict[str, bytes], float], tmp_path: Path, fraction: float
) -> None:
    traces, reference, took_s = job
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": SRC}
    killed = subprocess.Popen(_command(traces, 2), env=env, start_new_session=True, cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    time.sleep(fraction * took_s)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(killed.pid, signal.SIGKILL)
    assert killed.wait() == -signal.SIGKILL  # killed part-way, not finished
    _run(traces, tmp_path)
    assert _contents(out) == reference
    assert not [p.name for p in out.iterdir() if p.name.endswith(".partial")]
