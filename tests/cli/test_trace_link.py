"""``chakra_trace_link`` end to end: both flag spellings, batch, report, strict, bad input."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chakra.synth import SynthOptions, generate_job


def trace_link(*args: str) -> subprocess.CompletedProcess:
    script = [sys.executable, "-m", "chakra.cli.trace_link"]
    return subprocess.run([*script, *args], capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("job")
    generate_job(SynthOptions(seed=9, ranks=3, steps=2, ops_per_step=70), folder)
    return folder


def test_reference_flags_gzip_output_and_report(job: Path, tmp_path: Path) -> None:
    out, report = tmp_path / "rank0.et_plus.json.gz", tmp_path / "report.json"
    result = trace_link("--pytorch-et-file", str(job / "rank0.host_et.json"),
                        "--kineto-file", str(job / "rank0.kineto.json"),
                        "--output-file", str(out), "--report", str(report))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "host ops matched" in result.stdout and "100.0%" in result.stdout
    assert json.loads(gzip.decompress(out.read_bytes()))["nodes"]
    data = json.loads(report.read_text())
    assert data["host_coverage"] == 1.0 and data["gpu_coverage"] == 1.0


def test_head_flags_and_rank(job: Path, tmp_path: Path) -> None:
    result = trace_link("--chakra-host-trace", str(job / "rank1.host_et.json"),
                        "--chakra-device-trace", str(job / "rank1.kineto.json"),
                        "--rank", "1", "--output-file", str(tmp_path / "o.json"),
                        "--log-level", "debug")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "o.json").exists()


def test_batch_in_two_processes_equals_serial(job: Path, tmp_path: Path) -> None:
    hosts, devices = tmp_path / "hosts", tmp_path / "devices"
    hosts.mkdir()
    devices.mkdir()
    for rank in range(3):
        shutil.copy(job / f"rank{rank}.host_et.json", hosts)
        shutil.copy(job / f"rank{rank}.kineto.json", devices)
    serial = trace_link("--host-dir", str(hosts), "--device-dir", str(devices),
                        "--output-dir", str(tmp_path / "serial"))  # fmt: skip
    parallel = trace_link("--host-dir", str(hosts), "--device-dir", str(devices),
                          "--output-dir", str(tmp_path / "parallel"), "-j", "2")  # fmt: skip
    assert serial.returncode == parallel.returncode == 0, serial.stderr + parallel.stderr
    for rank in range(3):
        name = f"rank{rank}.et_plus.json"
        assert (tmp_path / "serial" / name).read_bytes() == (
            tmp_path / "parallel" / name
        ).read_bytes()
    assert parallel.stdout.count("GPU ops linked") == 3


@pytest.mark.parametrize("jobs", [["-j", "1"], ["-j", "2"], []])
def test_one_rank_in_two_processes_equals_one(
    job: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: list[str]
) -> None:
    """One rank loaded side by side and written by two processes (``-j 2``; by default
    where two cores are free), byte for byte what one process writes; no scratch left."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    outputs = []
    for run in (["-j", "1"], jobs):
        out = tmp_path / f"{len(outputs)}.et_plus.json"
        result = trace_link("--host-trace", str(job / "rank2.host_et.json"),
                            "--device-trace", str(job / "rank2.kineto.json"),
                            "--output-file", str(out), *run)  # fmt: skip
        assert result.returncode == 0, result.stderr
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert list(scratch.iterdir()) == []


def test_partial_link_warns_and_strict_refuses(job: Path, tmp_path: Path) -> None:
    document = json.loads((job / "rank0.kineto.json").read_text())
    cpu = [e for e in document["traceEvents"] if e.get("cat") == "cpu_op"]
    dropped = cpu[5:8]  # three recorded ops lost, e.g. by a profiler buffer overflow
    document["traceEvents"] = [e for e in document["traceEvents"] if e not in dropped]
    kineto = tmp_path / "kineto.json"
    kineto.write_text(json.dumps(document))
    args = ["--chakra-host-trace", str(job / "rank0.host_et.json"),
            "--chakra-device-trace", str(kineto)]  # fmt: skip
    partial = tmp_path / "partial.json"
    result = trace_link(*args, "--output-file", str(partial))
    assert result.returncode == 0 and partial.exists()
    assert "partial link: 3 of" in result.stderr and "host ops have no timing" in result.stderr
    strict = tmp_path / "strict.json"
    result = trace_link(*args, "--output-file", str(strict), "--strict")
    one_line_failure(result, "coverage below --strict thresholds")
    assert not strict.exists()
    relaxed = trace_link(*args, "--output-file", str(strict), "--strict",
                         "--min-host-coverage", "0.9")  # fmt: skip
    assert relaxed.returncode == 0 and strict.exists()


def one_line_failure(result: subprocess.CompletedProcess, *expected: str) -> None:
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("chakra_trace_link: error: ")
    for text in expected:
        assert text in lines[0]


def test_swapped_files(job: Path, tmp_path: Path) -> None:
    out = tmp_path / "o.json"
    result = trace_link("--chakra-host-trace", str(job / "rank0.kineto.json"),
                        "--chakra-device-trace", str(job / "rank0.host_et.json"),
                        "--output-file", str(out))  # fmt: skip
    # the device trace is read first: the host ET given in its place is named as such
    one_line_failure(result, "rank0.host_et.json", "this is a host execution trace")
    assert not out.exists()


def test_host_and_device_from_different_processes(job: Path, tmp_path: Path) -> None:
    out = tmp_path / "o.json"
    result = trace_link("--chakra-host-trace", str(job / "rank0.host_et.json"),
                        "--chakra-device-trace", str(job / "rank1.kineto.json"),
                        "--output-file", str(out))  # fmt: skip
    one_line_failure(result, "come from different processes", "--allow-pid-mismatch")
    assert not out.exists()


@pytest.mark.parametrize("damage", ["truncated", "empty_kineto"])
def test_damaged_kineto(job: Path, tmp_path: Path, damage: str) -> None:
    kineto = tmp_path / "kineto.json"
    text = (job / "rank0.kineto.json").read_bytes()
    kineto.write_bytes(text[: len(text) // 2] if damage == "truncated" else
                       b'{"schemaVersion": 1, "traceEvents": []}')  # fmt: skip
    out = tmp_path / "o.json"
    host = str(job / "rank0.host_et.json")
    result = trace_link("--chakra-host-trace", host, "--chakra-device-trace", str(kineto),
                        "--output-file", str(out))  # fmt: skip
    expected = "truncated" if damage == "truncated" else "no recognised Kineto events"
    one_line_failure(result, str(kineto), expected)
    assert not out.exists()


def test_missing_arguments_are_a_usage_error(tmp_path: Path) -> None:
    result = trace_link("--output-file", str(tmp_path / "o.json"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[0].startswith("usage: chakra_trace_link")
    assert result.stderr.splitlines()[-1].startswith(
        "chakra_trace_link: error: missing --device-trace"
    )
