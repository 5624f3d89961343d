"""Multi-file outputs (generator, Text converter, link batch, synth) appear whole or not at all,
a run that fails before its work creates nothing, and the temporaries of killed runs are
removed by the next run in their folder."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chakra.errors import FileAccessError
from chakra.fileio.stale import temporary_prefix
from chakra.synth import SynthOptions, generate_job
from chakra.text import convert_text
from tests.cli.conftest import Runner, Traces


def _failing_after(calls: int, real: Any) -> Any:
    """``real``, raising a FileAccessError (a full disk) from its call number ``calls``."""
    count = {"n": 0}

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        count["n"] += 1
        if count["n"] >= calls:
            raise FileAccessError("cannot write a later file: No space left on device")
        return real(*args, **kwargs)

    return wrapper


def test_generator_failing_on_a_later_file_leaves_none_regression(
    cli: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reported: chakra_generator left the files written before the one that failed."""
    import chakra.tools.generator as generator

    monkeypatch.setattr(generator, "write_et", _failing_after(7, generator.write_et))
    cli("generator", "--num_npus", "2", "--output-dir", tmp_path).one_line(1, "No space left")
    assert list(tmp_path.iterdir()) == []


def test_generator_whose_last_rename_fails_leaves_none(cli: Runner, tmp_path: Path) -> None:
    blocker = tmp_path / "two_comm_nodes_send_recv.1.et"  # the last file written
    blocker.mkdir()
    cli("generator", "--num_npus", "2", "--output-dir", tmp_path).one_line(1, str(blocker))
    assert list(tmp_path.iterdir()) == [blocker]


def test_text_conversion_failing_on_a_later_file_leaves_none(
    cli: Runner, traces: Traces, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import chakra.text.convert as text

    monkeypatch.setattr(text, "write_et", _failing_after(3, text.write_et))
    cli("converter", "Text", "--input", traces.text, "--output", tmp_path / "w", "--num-npus",
        "4", "--num-passes", "1").one_line(1, "No space left")  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_text_conversion_whose_rename_fails_leaves_none(traces: Traces, tmp_path: Path) -> None:
    blocker = tmp_path / "w.2.et"
    blocker.mkdir()
    with pytest.raises(FileAccessError, match=r"w\.2\.et"):
        convert_text(traces.text, tmp_path / "w", 4, 1)
    assert list(tmp_path.iterdir()) == [blocker]


def test_a_folder_at_an_output_is_refused_before_work(cli: Runner, traces, tmp_path) -> None:
    (tmp_path / "w.1.et").mkdir()
    cli("converter", "Text", "--input", traces.text, "--output", tmp_path / "w", "--num-npus",
        "2", "--num-passes", "1").one_line(1, "w.1.et: it is a folder")  # fmt: skip
    assert [p.name for p in tmp_path.iterdir()] == ["w.1.et"]


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("job")
    generate_job(SynthOptions(seed=9, ranks=3, steps=1, ops_per_step=40), folder)
    return folder


def _batch_folders(job: Path, tmp_path: Path, ranks: int = 3) -> tuple[Path, Path]:
    hosts, devices = tmp_path / "hosts", tmp_path / "devices"
    hosts.mkdir()
    devices.mkdir()
    for rank in range(ranks):
        shutil.copy(job / f"rank{rank}.host_et.json", hosts)
        shutil.copy(job / f"rank{rank}.kineto.json", devices)
    return hosts, devices


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_link_batch_with_a_failing_rank_writes_nothing(
    cli: Runner, job: Path, tmp_path: Path, jobs: str
) -> None:
    hosts, devices = _batch_folders(job, tmp_path)
    broken = devices / "rank2.kineto.json"
    broken.write_bytes(broken.read_bytes()[:2000])  # truncated
    out = tmp_path / "new" / "out"
    result = cli("trace_link", "--host-dir", hosts, "--device-dir", devices, "--output-dir", out,
                 "-j", jobs, "--report", tmp_path / "report.json")  # fmt: skip
    result.one_line(1, "1 of 3 ranks failed, so no file was written", "rank 2")
    assert "rank 0:" in result.stdout and "rank 1:" in result.stdout
    assert not (tmp_path / "new").exists() and not (tmp_path / "report.json").exists()


def test_link_batch_j_0_is_a_usage_error_regression(cli: Runner, job, tmp_path) -> None:
    """Reported: ``-j 0`` went on and created files."""
    hosts, devices = _batch_folders(job, tmp_path, ranks=1)
    out = tmp_path / "out"
    result = cli("trace_link", "--host-dir", hosts, "--device-dir", devices, "--output-dir", out,
                 "-j", "0")  # fmt: skip
    result.one_line(2, "argument -j/--jobs: must be an integer from 1 to 1,024, not '0'")
    assert not out.exists()


def test_link_batch_from_a_missing_folder_creates_nothing_regression(
    cli: Runner, job: Path, tmp_path: Path
) -> None:
    """Reported: a batch from a missing folder still created the output folder."""
    _, devices = _batch_folders(job, tmp_path, ranks=1)
    out = tmp_path / "out"
    cli("trace_link", "--host-dir", tmp_path / "nowhere", "--device-dir", devices,
        "--output-dir", out).one_line(1, "nowhere")  # fmt: skip
    assert not out.exists()


def test_synth_failing_on_its_last_file_leaves_nothing(
    cli: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import chakra.synth.job as job

    monkeypatch.setattr(job, "write_job_truth", _failing_after(1, job.write_job_truth))
    out = tmp_path / "new" / "job"
    cli("synth", "--out-dir", out, "--ranks", "2", "--steps", "1", "--ops-per-step", "30")\
        .one_line(1, "No space left")  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def _dead_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_temporaries_of_killed_runs_are_removed_by_the_next_regression(
    cli: Runner, traces: Traces, tmp_path: Path
) -> None:
    """Reported: a killed run left ``.partial`` temporaries that nothing removed. The next run
    writing into the folder removes those whose writer is gone, and only those."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        stale = tmp_path / f"{temporary_prefix('g.json', _dead_pid())}abc123.partial"
        live = tmp_path / f"{temporary_prefix('g.json', sleeper.pid)}def456.partial"
        other_host = tmp_path / f".g.json.0000abcd-{_dead_pid()}.ghi789.partial"
        old_style = tmp_path / ".g.json.0123456789ab.partial"
        for path in (stale, live, other_host, old_style):
            path.write_bytes(b"half a file")
        result = cli("jsonizer", "--input_filename", traces.et, "--output_filename",
                     tmp_path / "g.json")  # fmt: skip
        assert result.status == 0, result.errors
        assert not stale.exists()
        assert live.exists() and other_host.exists() and old_style.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
