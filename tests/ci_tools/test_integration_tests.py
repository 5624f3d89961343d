"""``ci_tools/integration_tests.py`` on an archive built from the generator."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from chakra.pipeline import ranks_in_folder, run_pipeline
from chakra.synth import SynthOptions, generate_job
from tests.conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "ci_tools" / "integration_tests.py"
GiB = 1 << 30


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


@pytest.mark.slow
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


@pytest.mark.slow
def test_missing_rank_and_bad_usage(bundle: Path) -> None:
    result = run("--tgz_path", str(bundle), "--num_ranks", "3", "--tolerance", "0.05",
                 "--expected-from-measured")  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.startswith("integration_tests: error: rank 2: no host trace")
    usage = run("--tgz_path", str(bundle), "--num_ranks", "2", "--tolerance", "0.05",
                "--expected_times_ms", "1.0")  # fmt: skip
    assert usage.returncode == 2 and "one --expected_times_ms per rank" in usage.stderr


def measured_run(bundle: Path, *extra: str) -> subprocess.CompletedProcess:
    return run("--tgz_path", str(bundle), "--num_ranks", "2", "--tolerance", "0.01",
               "--expected-from-measured", *extra)  # fmt: skip


def simulated_ms(result: subprocess.CompletedProcess) -> list[str]:
    return [line.split()[1] for line in result.stdout.splitlines()[1:3]]


def add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mtime: float) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime = len(data), mtime
    tar.addfile(info, io.BytesIO(data))


@pytest.mark.slow
def test_outputs_shipped_in_the_archive_are_not_taken_as_results(
    bundle: Path, tmp_path: Path
) -> None:
    """Another job's outputs (with their manifests, dated in the future) beside the traces,
    where the pipeline's output folder used to be: every result is computed afresh."""
    other = tmp_path / "other"
    generate_job(SynthOptions(seed=9, ranks=2, ops_per_step=120), other)
    run_pipeline(ranks_in_folder(other), other / "out", plot=False)
    forged = tmp_path / "forged.tgz"
    future = time.time() + 10**7
    with tarfile.open(bundle) as source, tarfile.open(forged, "w:gz") as tar:
        for info in source:
            tar.addfile(info, source.extractfile(info))
        for path in sorted((other / "out").iterdir()):
            for folder in ("traces/chakra_pipeline_out", "chakra_pipeline_out"):
                add_bytes(tar, f"{folder}/{path.name}", path.read_bytes(), future)
    clean, result = measured_run(bundle), measured_run(forged)
    assert result.returncode == clean.returncode == 0, result.stderr
    assert simulated_ms(result) == simulated_ms(clean)
    shipped = json.loads((other / "out" / "report.json").read_text())["ranks"]
    assert [f"{r['simulation']['simulated_makespan_us'] / 1000:.3f}" for r in shipped] != (
        simulated_ms(clean)
    )


def one_line_error(result: subprocess.CompletedProcess, archive: Path, expected: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.startswith(f"integration_tests: error: {archive}: "), result.stderr
    assert result.stderr.count("\n") == 1 and expected in result.stderr, result.stderr


def test_truncated_archive_is_one_line(bundle: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.tgz"
    cut.write_bytes(bundle.read_bytes()[: bundle.stat().st_size // 2])
    one_line_error(measured_run(cut), cut, "truncated or corrupt")


def test_nul_byte_in_a_pax_header_is_one_line(tmp_path: Path) -> None:
    info = tarfile.TarInfo("traces/kineto_0.json")
    info.size, info.pax_headers = 2, {"path": "traces/kineto_0.json"}
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(info, io.BytesIO(b"{}"))
    archive = tmp_path / "nul.tgz"
    archive.write_bytes(gzip.compress(raw.getvalue().replace(b"path=traces/", b"path=\0races/")))
    one_line_error(measured_run(archive), archive, "a NUL byte in its name")


@pytest.mark.slow
def test_not_an_archive_and_hostile_members_are_one_line(tmp_path: Path) -> None:
    text = tmp_path / "text.tgz"
    text.write_text("not an archive\n")
    one_line_error(measured_run(text), text, "not a tar archive")
    hostile = tmp_path / "hostile.tgz"
    with tarfile.open(hostile, "w:gz") as tar:
        link = tarfile.TarInfo("traces/chakra_pipeline_out")
        link.type, link.linkname = tarfile.SYMTYPE, str(tmp_path)
        tar.addfile(link)
    one_line_error(measured_run(hostile), hostile, "a symbolic link")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hostile.tgz", "text.tgz"]


@pytest.mark.slow
def test_work_dir_is_kept_new_and_never_a_link(bundle: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    result = measured_run(bundle, "--work-dir", str(work))
    assert result.returncode == 0, result.stderr
    assert f"outputs in {work / 'outputs'}" in result.stdout
    assert (work / "outputs" / "report.json").is_file()
    assert (work / "traces" / "traces" / "kineto_0.json").is_file()
    again = measured_run(bundle, "--work-dir", str(work))
    assert again.returncode == 1 and "not empty" in again.stderr
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    refused = measured_run(bundle, "--work-dir", str(link))
    assert refused.returncode == 1 and "a symbolic link" in refused.stderr
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.slow
def test_the_default_work_dir_is_temporary_and_removed(bundle: Path, tmp_path: Path) -> None:
    command = [sys.executable, str(SCRIPT), "--tgz_path", str(bundle), "--num_ranks", "2",
               "--tolerance", "0.01", "--expected-from-measured"]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, check=False,
                            env={**os.environ, "TMPDIR": str(tmp_path)})  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "outputs removed; --work-dir keeps them" in result.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_replaced_older_dated_archive_gives_its_own_results(bundle: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    generate_job(SynthOptions(seed=9, ranks=2, ops_per_step=120), other)
    replacement = tmp_path / "replacement.tgz"
    with tarfile.open(replacement, "w:gz") as tar:
        for rank in range(2):
            for name, kind in (("chakra_host_et", "host_et"), ("kineto", "kineto")):
                tar.add(other / f"rank{rank}.{kind}.json", f"traces/{name}_{rank}.json")
    path = tmp_path / "job.tgz"
    path.write_bytes(bundle.read_bytes())
    first = measured_run(path)
    path.write_bytes(replacement.read_bytes())
    os.utime(path, (10**9, 10**9))  # older than the first run's outputs
    fresh, second = measured_run(replacement), measured_run(path)
    assert second.returncode == fresh.returncode == first.returncode == 0, second.stderr
    assert simulated_ms(second) == simulated_ms(fresh) != simulated_ms(first)


def test_a_compression_bomb_is_refused_before_extraction_regression(tmp_path: Path) -> None:
    """Reported: a 3 MB archive holding a 3 GiB member (under the 4 GiB a member) was
    extracted. The member's header already says it is 1000 times the archive: refused
    before any of its bytes is written, naming the option that raises the limit."""
    header = tarfile.TarInfo("traces/kineto_0.json")
    header.size = 3 * GiB
    zeros = gzip.compress(bytes(1 << 20), compresslevel=9)  # one MiB of the member
    archive = tmp_path / "bomb.tgz"
    with archive.open("wb") as out:  # gzip members, one after the other, are one stream
        out.write(gzip.compress(header.tobuf(format=tarfile.PAX_FORMAT)))
        for _ in range(3 * 1024):
            out.write(zeros)
    assert archive.stat().st_size < 4 << 20
    work = tmp_path / "work"
    result = measured_run(archive, "--work-dir", str(work))
    one_line_error(result, archive, "over 200 times the archive's 3.1 MiB (the limit on the "
                   "compression ratio, --max-ratio raises it)")  # fmt: skip
    assert list(work.iterdir()) == []
