"""``chakra.progress``: the items pass unchanged; a bar on a terminal, log lines otherwise,
nothing for small inputs; and the tools' phases (load, link, convert, simulate, write) that
report through it on a big input, with the thresholds lowered to make a small one big."""

from __future__ import annotations

import gzip
import logging
import subprocess
import sys
from pathlib import Path

import pytest

import chakra.progress
from chakra.convert import convert_file
from chakra.link import LinkOptions
from chakra.link.batch import link_files
from chakra.progress import CHECK_EVERY, STEPS, phase, reading, tracked
from chakra.simulate.run import simulate_files
from chakra.synth import SynthOptions, generate_job


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "chakra.progress"]


def test_small_loops_are_silent(caplog: pytest.LogCaptureFixture, capsys) -> None:
    with caplog.at_level(logging.INFO):
        assert list(tracked(range(10), 10, "x", log_every_s=0)) == list(range(10))
    assert not caplog.records and not capsys.readouterr().err


def test_log_lines_off_a_terminal(caplog: pytest.LogCaptureFixture) -> None:
    total = 3 * CHECK_EVERY
    with caplog.at_level(logging.INFO, logger="chakra.progress"):
        items = list(tracked(range(total), total, "writing t.et", unit="nodes", min_items=0,
                             log_every_s=0, terminal=False))  # fmt: skip
    assert items == list(range(total))
    lines = messages(caplog)
    assert lines[0] == f"writing t.et ({total:,} nodes)"
    assert f"writing t.et: {2 * CHECK_EVERY:,} of {total:,} nodes (67%)" in lines
    assert lines[-1].startswith("writing t.et: done in ") and lines[-1].endswith(" s")


def test_a_bar_on_a_terminal(caplog: pytest.LogCaptureFixture, capsys) -> None:
    total = 2 * CHECK_EVERY
    with caplog.at_level(logging.INFO, logger="chakra.progress"):
        done = sum(tracked(range(total), total, "writing", min_items=0, terminal=True))
    assert done == sum(range(total))
    assert "writing" in capsys.readouterr().err  # the bar
    lines = messages(caplog)
    assert lines[0] == f"writing ({total:,} items)" and lines[-1].startswith("writing: done in")
    assert not any(" of " in line for line in lines)  # no periodic line beside the bar


def test_silent_when_info_lines_are_off(caplog: pytest.LogCaptureFixture, capsys) -> None:
    """``--log-level WARNING`` silences progress, bar included."""
    with caplog.at_level(logging.WARNING):
        list(tracked(range(CHECK_EVERY * 2), CHECK_EVERY * 2, "x", min_items=0, terminal=True))
    assert not caplog.records and not capsys.readouterr().err


def test_steps_and_their_end(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chakra.progress, "MIN_ITEMS", 10)
    linking = phase("linking a with b", 10, detail="10 ops", total=2, unit=STEPS,
                    log_every_s=0, terminal=False)  # fmt: skip
    with caplog.at_level(logging.INFO, logger="chakra.progress"), linking as progress:
        progress.step("matching")
        progress.step("reporting")
    lines = messages(caplog)
    assert lines[:3] == ["linking a with b (10 ops)", "linking a with b: step 1 of 2: matching",
                         "linking a with b: step 2 of 2: reporting"]  # fmt: skip
    assert lines[3].startswith("linking a with b: done in")


def test_a_failed_or_abandoned_phase_has_no_end_line(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chakra.progress, "MIN_ITEMS", 10)
    with caplog.at_level(logging.INFO, logger="chakra.progress"):
        with pytest.raises(ValueError), phase("converting", 10, log_every_s=0):
            raise ValueError
        items = tracked(range(10), 10, "writing", min_items=0, log_every_s=0, terminal=False)
        assert next(items) == 0
        del items
    lines = messages(caplog)
    assert lines[:2] == ["converting", "writing (10 items)"]
    assert not any("done in" in line for line in lines)


def test_items_are_drawn_only_when_used(caplog: pytest.LogCaptureFixture) -> None:
    """No reading ahead: an error of item k is raised when item k is asked for."""
    drawn = []

    def items():
        for item in range(3 * CHECK_EVERY):
            drawn.append(item)
            yield item

    with caplog.at_level(logging.INFO, logger="chakra.progress"):
        shown = tracked(items(), 3 * CHECK_EVERY, "x", min_items=0, terminal=False)
        for count, item in enumerate(shown, 1):
            assert len(drawn) == count and item == count - 1


def test_reading_counts_bytes_of_the_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "lines.txt"
    path.write_bytes(b"x\n" * (4 * CHECK_EVERY))
    with caplog.at_level(logging.INFO, logger="chakra.progress"), path.open("rb") as stream:
        assert sum(1 for _ in reading(stream, stream, "reading lines")) == 4 * CHECK_EVERY
    assert not messages(caplog)  # a small file
    monkeypatch.setattr(chakra.progress, "MIN_BYTES", 0)
    monkeypatch.setattr(chakra.progress, "LOG_EVERY_S", 0)
    with caplog.at_level(logging.INFO, logger="chakra.progress"), path.open("rb") as stream:
        assert sum(1 for _ in reading(stream, stream, "reading lines")) == 4 * CHECK_EVERY
    lines = messages(caplog)
    assert lines[0] == "reading lines (0 MB)" and lines[-1].startswith("reading lines: done")
    assert any(line.startswith("reading lines: 0 of 0 MB (") for line in lines)


def test_reading_a_gzip_stream_counts_the_compressed_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Progress is how far into the file as stored, whose size is known (not the content's)."""
    path = tmp_path / "lines.txt.gz"
    with gzip.open(path, "wb") as out:
        out.write(b"x\n" * (4 * CHECK_EVERY))
    positions = []
    monkeypatch.setattr(chakra.progress, "MIN_BYTES", 0)
    monkeypatch.setattr(chakra.progress.Progress, "update",
                        lambda self, done: positions.append((done, self.total)))  # fmt: skip
    with caplog.at_level(logging.INFO), gzip.open(path, "rb") as stream:
        assert sum(1 for _ in reading(stream, stream, "reading lines")) == 4 * CHECK_EVERY
    size = path.stat().st_size
    assert positions and all(0 < done <= total == size for done, total in positions)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> list:
    folder = tmp_path_factory.mktemp("job")
    return generate_job(SynthOptions(seed=3, ranks=2, steps=1, ops_per_step=60), folder).ranks


def _pipeline(job: list, folder: Path) -> list[Path]:
    ets = []
    for rank in job:
        et_plus, et = folder / f"rank{rank.rank}.et_plus.json", folder / f"rank{rank.rank}.et"
        link_files(rank.host_et, rank.kineto, et_plus, LinkOptions())
        convert_file(et_plus, et)
        ets.append(et)
    simulate_files(ets)
    return ets


def test_small_inputs_print_nothing_extra(
    job: list, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        _pipeline(job, tmp_path)
    assert not messages(caplog)


def test_every_phase_of_a_big_input_reports(
    job: list, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Load, link, convert, simulate and write each log a start line, progress and an end
    line (thresholds lowered: the job is small)."""
    for name, value in (("MIN_ITEMS", 0), ("MIN_BYTES", 0), ("LOG_EVERY_S", 0),
                        ("CHECK_EVERY", 8)):  # fmt: skip
        monkeypatch.setattr(chakra.progress, name, value)
    monkeypatch.setattr(chakra.progress, "_on_terminal", lambda: False)
    with caplog.at_level(logging.INFO):
        _pipeline(job, tmp_path)
    lines = messages(caplog)
    host, kineto = job[0].host_et, job[0].kineto
    et_plus, et = tmp_path / "rank0.et_plus.json", tmp_path / "rank0.et"
    expected = {  # start line, a progress line, end line
        f"loading Kineto trace {kineto}": " events (",
        f"loading host ET {host}": " nodes (",
        f"linking {host} with {kineto}": ": step 3 of 6: attaching GPU ops",
        f"writing {et_plus}": " nodes (",
        f"loading ET+ {et_plus}": " MB (",
        f"converting {et_plus}": ": step 5 of 8: breaking cycles",
        f"writing {et}": " nodes (",
        f"loading rank 0 from {et}": " MB (",
    }
    for what, progress in expected.items():
        assert any(line.startswith(f"{what} (") for line in lines), (what, lines)
        assert any(line.startswith(f"{what}: ") and progress in line for line in lines), what
        assert any(line.startswith(f"{what}: done in ") for line in lines), what
    assert any(line.startswith("simulating 2 ranks, replay (") for line in lines), lines
    assert any(line.startswith("simulating 2 ranks, replay: done in ") for line in lines), lines


def test_a_bar_per_phase_on_a_terminal(
    job: list, tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    for name, value in (("MIN_ITEMS", 0), ("MIN_BYTES", 0), ("CHECK_EVERY", 8)):
        monkeypatch.setattr(chakra.progress, name, value)
    monkeypatch.setattr(chakra.progress, "_on_terminal", lambda: True)
    with caplog.at_level(logging.INFO):
        _pipeline(job[:1], tmp_path)
    bars = capsys.readouterr().err
    for what in ("loading Kineto trace", "loading host ET", "linking", "converting",
                 "loading ET+", "writing", "loading rank 0"):  # fmt: skip
        assert f"{what} " in bars, what


def test_the_cli_shows_progress_without_flags(job: list, tmp_path: Path) -> None:
    """The CLIs log INFO by default: a user who passes no flag sees the progress lines."""
    setup = ("import chakra.progress as p; p.MIN_ITEMS = p.MIN_BYTES = p.LOG_EVERY_S = 0; "
             "p.CHECK_EVERY = 8; from chakra.cli.trace_link import main; main()")  # fmt: skip
    out = tmp_path / "r.et_plus.json"
    result = subprocess.run(
        [sys.executable, "-c", setup, "--chakra-host-trace", str(job[0].host_et),
         "--chakra-device-trace", str(job[0].kineto), "--output-file", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"chakra_trace_link: INFO: linking {job[0].host_et} with" in result.stderr
    assert ": step 2 of 6: nesting CPU ops per thread" in result.stderr
