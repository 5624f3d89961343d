"""``chakra_synth`` end to end, through the installed console script."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.synth.conftest import load_json


def synth(*args: str) -> subprocess.CompletedProcess:
    script = [sys.executable, "-m", "chakra.cli.synth"]
    return subprocess.run([*script, *args], capture_output=True, text=True, check=False)


def test_writes_a_valid_job(tmp_path: Path) -> None:
    result = synth("--out-dir", str(tmp_path), "--ranks", "2", "--seed", "3", "--steps", "1",
                   "--ops-per-step", "30", "--vintage", "no_flows", "--gzip",
                   "--validate")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "all invariants hold" in result.stderr
    names = sorted(p.name for p in tmp_path.iterdir())
    assert "rank1.kineto.json.gz" in names and "job.truth.json" in names


def test_bad_option_is_a_usage_error_at_parse_time(tmp_path: Path) -> None:
    result = synth("--out-dir", str(tmp_path), "--ranks", "0")
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "chakra_synth: error: argument --ranks: must be an integer from 1 to 64, not '0'"
    )
    assert list(tmp_path.iterdir()) == []


def test_unwritable_folder_is_one_line_status_1(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = synth("--out-dir", str(blocker / "sub"))
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_missing_arguments_exit_2() -> None:
    result = synth()
    assert result.returncode == 2
    assert "usage:" in result.stderr


def test_speed_and_copy_flags_reach_the_truth(tmp_path: Path) -> None:
    result = synth("--out-dir", str(tmp_path), "--steps", "1", "--ops-per-step", "30",
                   "--gpu-factor", "0.5", "--cpu-factor", "2", "--network-factor", "0.25",
                   "--pageable-async-copy", "--validate")  # fmt: skip
    assert result.returncode == 0, result.stderr
    options = load_json(tmp_path / "job.truth.json")["options"]
    assert options["pageable_async_copy"] is True
    assert (options["gpu_factor"], options["cpu_factor"], options["network_factor"]) == (
        0.5, 2.0, 0.25)  # fmt: skip


@pytest.mark.parametrize("value", ["-2", "0", "nan", "inf"])
@pytest.mark.slow
def test_bad_factor_is_a_usage_error_at_parse_time(tmp_path: Path, value: str) -> None:
    result = synth("--out-dir", str(tmp_path), "--gpu-factor", value)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        f"chakra_synth: error: argument --gpu-factor: must be a finite number above 0, "
        f"not '{value}'"
    )
    assert list(tmp_path.iterdir()) == []


def test_worker_threads_flag_reaches_the_truth(tmp_path: Path) -> None:
    result = synth("--out-dir", str(tmp_path), "--steps", "1", "--ops-per-step", "30",
                   "--worker-threads", "--validate")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert load_json(tmp_path / "job.truth.json")["options"]["worker_threads"] is True
