"""``ci_tools/integration_tests.py`` on an archive built from the generator."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from chakra.synth import SynthOptions, generate_job
from tests.conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "ci_tools" / "integration_tests.py"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A .tgz with the reference's file names: chakra_host_et_<r>.json, kineto_<r>.json."""
    folder = tmp_path_factory.mktemp("bundle")
    job = folder / "job"
    generate_job(SynthOptions(seed=8, ranks=2, ops_per_step=70), job)
    archive = folder / "traces.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        for rank in range(2):
            tar.add(job / f"rank{rank}.host_et.json", f"traces/chakra_host_et_{rank}.json")
            tar.add(job / f"rank{rank}.kineto.json", f"traces/kineto_{rank}.json")
    return archive


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, check=False)  # fmt: skip


def test_passes_against_measured_times(bundle: Path) -> None:
    result = run("--tgz_path", str(bundle), "--num_ranks", "2", "--tolerance", "0.01",
                 "--expected-from-measured")  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed, 0 failed" in result.stdout


def test_fails_with_a_table_when_off_by_more_than_the_tolerance(bundle: Path) -> None:
    measured = run("--tgz_path", str(bundle), "--num_ranks", "2", "--tolerance", "0.01",
                   "--expected-from-measured").stdout.splitlines()  # fmt: skip
    times = [line.split()[1] for line in measured[1:3]]  # simulated ms per rank
    off = str(float(times[1]) * 1.2)
    result = run("--tgz_path", str(bundle), "--num_ranks", "2", "--tolerance", "0.05",
                 "--expected_times_ms", times[0], off)  # fmt: skip
    assert result.returncode == 1
    rows = result.stdout.splitlines()
    assert rows[1].endswith("ok") and rows[2].endswith("MISMATCH")
    assert "1 passed, 1 failed" in result.stdout


def test_missing_rank_and_bad_usage(bundle: Path) -> None:
    result = run("--tgz_path", str(bundle), "--num_ranks", "3", "--tolerance", "0.05",
                 "--expected-from-measured")  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.startswith("integration_tests: error: rank 2: no host trace")
    usage = run("--tgz_path", str(bundle), "--num_ranks", "2", "--tolerance", "0.05",
                "--expected_times_ms", "1.0")  # fmt: skip
    assert usage.returncode == 2 and "one --expected_times_ms per rank" in usage.stderr
