"""SIGTERM is handled like Ctrl-C (issue "[security]"): the tool unwinds, removes its
temporaries, leaves no partial output and no worker process, prints one line and exits with
status 143 (128 + SIGTERM). Python's default would kill it on the spot."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import chakra
from chakra.synth import SynthOptions, generate_job

psutil = pytest.importorskip("psutil")  # a test dependency, not the package's
pytestmark = pytest.mark.slow  # two tools run on a 4-rank job, ~12 s

SRC = str(Path(chakra.__file__).resolve().parents[1])
ENV = {**os.environ, "PYTHONPATH": SRC}


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4-rank synthetic job big enough that linking a rank takes a moment."""
    traces = tmp_path_factory.mktemp("traces")
    generate_job(SynthOptions(seed=3, ranks=4, ops_per_step=1500), traces)
    return traces


def _terminate_when(process: subprocess.Popen, ready) -> tuple[int, str, float]:
    """Send SIGTERM once ``ready()`` holds; the status, stderr and seconds it took to end."""
    deadline = time.monotonic() + 60
    while not ready() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process.poll() is None, "the tool ended before it could be terminated"
    process.send_signal(signal.SIGTERM)
    began = time.monotonic()
    _, stderr = process.communicate(timeout=60)
    return process.returncode, stderr, time.monotonic() - began


def _temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.endswith(".partial"))


def test_sigterm_of_the_pipeline_with_workers(job: Path, tmp_path: Path) -> None:
    """Into an existing folder (which stays): no temporary and no worker is left."""
    out = tmp_path / "out"
    out.mkdir()
    command = [sys.executable, "-m", "chakra.cli.pipeline", "--trace-dir", str(job),
               "--output-dir", str(out), "--no-plot", "-j", "2"]  # fmt: skip
    process = subprocess.Popen(command, env=ENV, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    workers: list[int] = []

    def ready() -> bool:
        workers[:] = [c.pid for c in psutil.Process(process.pid).children(recursive=True)]
        return len(workers) >= 2

    status, stderr, took_s = _terminate_when(process, ready)
    assert status == 143, stderr
    assert stderr.splitlines()[-1] == "chakra_pipeline: terminated (SIGTERM)"
    assert "Traceback" not in stderr
    assert took_s < 30
    assert [pid for pid in workers if psutil.pid_exists(pid)
            and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE] == []  # fmt: skip
    assert _temporaries(out) == []


@pytest.fixture(scope="module")
def big_rank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One rank whose ET+ is big enough (~60 MB) that writing it takes a moment."""
    traces = tmp_path_factory.mktemp("big")
    generate_job(SynthOptions(seed=3, ranks=1, ops_per_step=6000), traces)
    return traces


def test_sigterm_of_the_linker_while_it_writes(big_rank: Path, tmp_path: Path) -> None:
    """SIGTERM as soon as the output's temporary appears: the temporary is removed and no
    output is left."""
    out = tmp_path / "out"
    out.mkdir()
    command = [sys.executable, "-m", "chakra.cli.trace_link",
               "--chakra-host-trace", str(big_rank / "rank0.host_et.json"),
               "--chakra-device-trace", str(big_rank / "rank0.kineto.json"),
               "--output-file", str(out / "linked.json")]  # fmt: skip
    process = subprocess.Popen(command, env=ENV, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    status, stderr, _ = _terminate_when(process, lambda: bool(_temporaries(out)))
    assert status == 143, stderr
    assert stderr.splitlines()[-1] == "chakra_trace_link: terminated (SIGTERM)"
    assert "Traceback" not in stderr
    assert sorted(p.name for p in out.iterdir()) == []
