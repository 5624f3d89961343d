"""``chakra.progress``: the items pass unchanged; a bar on a terminal, log lines otherwise,
nothing for small inputs; and the tools' phases (load, link, convert, simulate, write) that
report through it on a big input, with the thresholds lowered to make a small one big."""

from __future__ import annotations

import fcntl
import gzip
import io
import logging
import multiprocessing
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tqdm import tqdm

import chakra.progress
from chakra.convert import convert_file
from chakra.link import LinkOptions
from chakra.link.batch import link_files
from chakra.progress import (
    CHECK_EVERY,
    CLEAR_LINE,
    STEPS,
    ConsoleHandler,
    activity,
    phase,
    reading,
    tracked,
)
from chakra.simulate.replay import SimOptions
from chakra.simulate.run import simulate_files
from chakra.simulate.scenarios import DEFAULT_SCENARIOS, run_scenarios
from chakra.synth import SynthOptions, generate_job
from chakra.views.bound import free_makespans


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
    monkeypatch.setattr(chakra.progress, "bars_on", lambda: False)
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
    monkeypatch.setattr(chakra.progress, "bars_on", lambda: True)
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


# --- bars on a terminal: shown late, redrawn by the ticker, never broken by log lines ---

#: A bar as tqdm draws it: ``12%|`` or a clock ``[00:03``.
BAR = re.compile(r"\d+%\||\[\d\d:\d\d")


def rendered(output: str) -> list[str]:
    """The lines a terminal shows for ``output``: text overwrites from the cursor; ``\\r``
    goes to the line's start, ``\\n`` to the next line's, ``ESC[K`` erases to the line's
    end and ``ESC[nA`` goes up n lines (what tqdm and :class:`ConsoleHandler` write);
    trailing blanks (a cleared bar) dropped."""
    screen, row, col = [""], 0, 0
    for token in re.findall(r"\x1b\[\d*[A-Za-z]|\n|\r|[^\r\n\x1b]+", output):
        if token == "\n":
            row, col = row + 1, 0
            screen += [""] * (row + 1 - len(screen))
        elif token == "\r":
            col = 0
        elif token.endswith("K"):
            screen[row] = screen[row][:col]
        elif token.endswith("A"):
            row = max(row - int(token[2:-1] or 1), 0)
        elif not token.startswith("\x1b"):
            line = screen[row].ljust(col)
            screen[row] = line[:col] + token + line[col + len(token) :]
            col += len(token)
    return [line.rstrip() for line in screen]


def spliced(lines: list[str], prefix: str) -> list[str]:
    """The lines that hold a bar and a log line together."""
    return [line for line in lines if BAR.search(line) and prefix in line]


def test_rendered_follows_the_cursor() -> None:
    assert rendered("abc\rx\n") == ["xbc", ""]
    assert rendered("bar 10%|\r\x1b[Klog\nbar") == ["log", "bar"]
    assert rendered("one\ntwo\x1b[A\rO") == ["One", "two"]


@pytest.fixture
def bars(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Bars on (as ``--progress`` turns them on), a fast ticker, phases shown at once."""
    monkeypatch.setattr(chakra.progress, "TICK_S", 0.02)
    monkeypatch.setattr(chakra.progress, "SHOW_AFTER_S", 0.05)
    chakra.progress.choose_bars(True)
    yield
    chakra.progress.choose_bars(None)


def drawn_until(capsys: pytest.CaptureFixture, done: Callable[[str], bool]) -> str:
    """What stderr got until ``done`` of it (the ticker draws; at most 5 s)."""
    err, deadline = "", time.monotonic() + 5.0
    while not done(err) and time.monotonic() < deadline:
        time.sleep(0.02)
        err += capsys.readouterr().err
    return err


def test_a_phase_that_lasts_is_shown_and_its_clock_moves(
    bars: None, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="chakra.progress"):
        with activity("quick"):
            pass
        quick = capsys.readouterr().err
        with activity("writing the timeline"):  # redrawn while nothing counts
            err = drawn_until(capsys, lambda err: err.count("writing the timeline [") >= 3)
    lines = messages(caplog)
    assert lines[0] == "writing the timeline" and len(lines) == 2
    assert lines[1].startswith("writing the timeline: done in ")
    assert "quick" not in quick and err.count("writing the timeline [") >= 3, err


def test_a_step_phase_is_shown_late_with_its_step(
    bars: None, caplog: pytest.LogCaptureFixture, capsys
) -> None:
    """Too small to be shown from its start (no size), shown once it lasts: the bar says
    which step it is in."""
    converting = phase("converting x", 10, total=3, unit=STEPS)
    with caplog.at_level(logging.INFO, logger="chakra.progress"), converting as progress:
        progress.step("indexing nodes")
        progress.step("breaking cycles")
        err = drawn_until(capsys, lambda err: "breaking cycles" in err)
    assert messages(caplog)[0] == "converting x"
    assert "converting x:  33%|" in err and "breaking cycles" in err


def test_late_phases_need_a_terminal(caplog: pytest.LogCaptureFixture, capsys, monkeypatch):
    """Off a terminal (the default when stderr is a file or pipe), a small phase stays
    silent however long it lasts: logs keep their lines."""
    monkeypatch.setattr(chakra.progress, "SHOW_AFTER_S", 0.0)
    monkeypatch.setattr(chakra.progress, "TICK_S", 0.01)
    with caplog.at_level(logging.INFO, logger="chakra.progress"), activity("writing"):
        time.sleep(0.1)
    assert not messages(caplog) and not capsys.readouterr().err


def test_log_lines_clear_the_bars_and_draw_them_again(bars: None) -> None:
    """A log line written while a bar is drawn has a line of its own; the bar comes back
    under it."""
    stream = io.StringIO()
    log = logging.getLogger("test_progress.console")
    handler = ConsoleHandler(stream)
    handler.setFormatter(logging.Formatter("tool: %(levelname)s: %(message)s"))
    log.addHandler(handler)
    log.propagate = False
    try:
        bar = tqdm(total=10, desc="linking", file=stream, leave=False)
        bar.update(3)
        log.warning("rank 1: 12 ops not linked")
        bar.update(2)
        bar.close()
    finally:
        log.removeHandler(handler)
    lines = rendered(stream.getvalue())
    assert "tool: WARNING: rank 1: 12 ops not linked" in lines
    assert not spliced(lines, "tool: ")


def test_a_worker_clears_the_line_before_its_own(
    bars: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker process cannot clear the main process's bars: its lines begin by clearing
    the terminal's line, on which the main process's bar may be."""
    handler = ConsoleHandler(io.StringIO())
    handler.setFormatter(logging.Formatter("tool: %(message)s"))
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "linked", None, None)
    assert handler.format(record) == "tool: linked"  # the main process
    monkeypatch.setattr(multiprocessing.current_process(), "name", "ForkProcess-1")
    assert handler.format(record) == CLEAR_LINE + "tool: linked"
    assert rendered("main bar 50%|" + handler.format(record) + "\n") == ["tool: linked", ""]
    chakra.progress.choose_bars(False)  # --no-progress: nothing to clear
    assert handler.format(record) == "tool: linked"


def test_each_simulation_is_named(
    job: list, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay, the model-only run, each what-if and each slack run say which they
    are (they were six identical ``simulating 2 ranks`` lines)."""
    monkeypatch.setattr(chakra.progress, "MIN_ITEMS", 0)
    ets = _pipeline(job, tmp_path)
    with caplog.at_level(logging.INFO, logger="chakra.progress"):
        replay = simulate_files(ets, options=SimOptions(explain=True))
        run_scenarios(replay, DEFAULT_SCENARIOS[:1])
        free_makespans(replay)
    starts = [line for line in messages(caplog) if "done in" not in line]
    assert starts[:3] == [
        "simulating 2 ranks, replay (945 nodes)",
        "simulating 2 ranks, model only (945 nodes)",
        "simulating 2 ranks, what-if: GPU compute 2x faster (945 nodes)",
    ]
    assert "simulating 2 ranks, slack: GPU compute free (945 nodes)" in starts[3:]


def _tool(module: str, *args: str, setup: str = "") -> list[str]:
    return [sys.executable, "-c", f"{setup}from {module} import main; main()", *args]


#: Thresholds lowered: the small job's phases are shown from their start.
SMALL_IS_BIG = "import chakra.progress as p; p.MIN_ITEMS = p.MIN_BYTES = 0; p.CHECK_EVERY = 8; "


def test_the_progress_option(job: list, tmp_path: Path) -> None:
    """``--progress`` draws bars on a pipe; by default and with ``--no-progress`` a pipe
    gets log lines only."""
    link = ["--chakra-host-trace", str(job[0].host_et), "--chakra-device-trace",
            str(job[0].kineto), "--output-file", str(tmp_path / "r.et_plus.json")]  # fmt: skip
    errs = {}
    for flag in ("--progress", "--no-progress", None):
        command = _tool("chakra.cli.trace_link", *link, *[flag] * bool(flag), setup=SMALL_IS_BIG)
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stderr
        errs[flag] = result.stderr
    assert "%|" in errs["--progress"] and "linking " in errs["--progress"]
    assert not spliced(rendered(errs["--progress"]), "chakra_trace_link: ")
    for quiet in (errs["--no-progress"], errs[None]):
        assert "%|" not in quiet and "\r" not in quiet
        assert "chakra_trace_link: INFO: linking " in quiet


# --- the pipeline under a pseudo-terminal ---

#: GPU ops per rank and step of the job the pipeline runs under a pty: 8,000 gives 2 ranks
#: of about 113k nodes each (a run of about 30 s on 2 cores); the issue's 2-rank job of
#: 320k nodes per rank (77 s) is ``CHAKRA_PTY_OPS_PER_STEP=22500``.
PTY_OPS_PER_STEP = int(os.environ.get("CHAKRA_PTY_OPS_PER_STEP", "8000"))
#: The longest a terminal may stay without output.
MAX_QUIET_S = 3.0


def run_in_pty(command: list[str], columns: int = 160) -> tuple[int, list[tuple[float, bytes]]]:
    """Run ``command`` with a pseudo-terminal (``columns`` wide) as stdin, stdout and
    stderr: its exit status, and what it wrote, chunk by chunk, with the seconds since
    its start at which each arrived."""
    started = time.monotonic()
    pid, terminal = pty.fork()
    if pid == 0:  # the child: never back into pytest
        try:
            os.execv(command[0], command)
        finally:
            os._exit(127)
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    chunks = []
    while True:
        try:
            data = os.read(terminal, 1 << 16)
        except OSError:  # EIO: the child closed its side
            break
        if not data:
            break
        chunks.append((time.monotonic() - started, data))
    os.close(terminal)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), chunks


def quiet_stretches(chunks: list[tuple[float, bytes]]) -> list[tuple[float, float, str]]:
    """Each stretch without output longer than :data:`MAX_QUIET_S`: when it began, how
    long it lasted, and the output that ended it."""
    out, last = [], 0.0
    for at, data in chunks:
        if at - last > MAX_QUIET_S:
            out.append((last, at - last, data.decode(errors="replace")[:120]))
        last = at
    return out


@pytest.mark.slow
def test_the_pipeline_never_leaves_a_terminal_quiet(tmp_path: Path) -> None:
    """The issue's test: on a 2-rank job (:data:`PTY_OPS_PER_STEP`), run under a
    pseudo-terminal, no stretch of more than 3 s without output (pairing, loading,
    linking, writing, converting, every simulation and view included), and no log line
    (the workers' too) on a line with a bar."""
    traces = tmp_path / "traces"
    generate_job(SynthOptions(seed=1, ranks=2, steps=2, ops_per_step=PTY_OPS_PER_STEP), traces)
    command = _tool("chakra.cli.pipeline", "--trace-dir", str(traces), "--output-dir",
                    str(tmp_path / "out"), "-j", "2")  # fmt: skip
    status, chunks = run_in_pty(command)
    output = b"".join(data for _, data in chunks).decode()
    assert status == 0, output[-3000:]
    assert quiet_stretches(chunks) == [], f"{chunks[-1][0]:.1f} s in all"
    lines = rendered(output)
    assert not spliced(lines, "chakra_pipeline: "), lines
    for what in ("linking and converting", "converting", "simulating 2 ranks, replay",
                 "what-if: GPU compute 2x faster"):  # fmt: skip
        assert any(what in line for line in lines), (what, lines)
    # With -j 2 the timeline is written by a second process beside the other views; the
    # wait for it is shown only when it outlasts them (a fast machine: never), so only
    # its file is asserted here; the quiet-stretch check above covers the wait.
    assert [p.stat().st_size > 0 for p in (tmp_path / "out").glob("timeline.json*")] == [True]
