"""The pipeline's timeline, bounded (issue 32): none (``--no-timeline``), a stretch of time
(``--timeline-window``: µs, or steps), gzip-compressed above a number of events, and a
warning naming the remedies when it is still big. Checked on a synthetic 2-rank, 3-step job
against the uncut timeline: a window keeps exactly the slices that overlap it."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from chakra.cli.pipeline import main
from chakra.errors import ChakraError
from chakra.pipeline import RankFiles, run_pipeline, timeline_file
from chakra.pipeline.timeline_file import TimelineOptions
from chakra.simulate.run import simulate_files
from chakra.synth import SynthOptions, generate_job
from chakra.views.plot import plot_utilisation
from chakra.views.timeline_window import WindowChoice


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> list[RankFiles]:
    folder = tmp_path_factory.mktemp("tl")
    summary = generate_job(SynthOptions(seed=4, ranks=2, steps=3, ops_per_step=60), folder)
    return [RankFiles(r.rank, r.host_et, r.kineto) for r in summary.ranks]


@pytest.fixture(scope="module")
def whole(ranks: list[RankFiles], tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """The events of the uncut timeline."""
    out = tmp_path_factory.mktemp("whole")
    result = run_pipeline(ranks, out, plot=False, html=False, what_if=[])
    return json.loads(Path(result.timeline).read_text())["traceEvents"]


def _run(ranks: list[RankFiles], out: Path, **timeline: Any) -> Any:
    return run_pipeline(ranks, out, plot=False, html=False, what_if=[],
                        timeline=TimelineOptions(**timeline))  # fmt: skip


def _slices(events: list[dict]) -> list[tuple]:
    return sorted((e["pid"], e["tid"], e["ts"], e["dur"], e["name"]) for e in events
                  if e["ph"] == "X")  # fmt: skip


def test_no_timeline(ranks: list[RankFiles], tmp_path: Path) -> None:
    """None written, and an earlier run's in the folder goes (it would not match report.json)."""
    _run(ranks, tmp_path)
    assert (tmp_path / "timeline.json").exists()
    result = _run(ranks, tmp_path, write=False)
    assert result.timeline is None
    assert not list(tmp_path.glob("timeline*"))
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["timeline"] == {"ranks": [], "window": None}


def test_a_time_window_keeps_the_slices_that_overlap_it(
    ranks: list[RankFiles], whole: list[dict], tmp_path: Path
) -> None:
    ends = [e["ts"] + e["dur"] for e in whole if e["ph"] == "X"]
    lo, hi = max(ends) * 0.4, max(ends) * 0.6
    result = _run(ranks, tmp_path, window=WindowChoice(lo, hi))
    events = json.loads(Path(result.timeline).read_text())["traceEvents"]
    expected = [e for e in whole if e["ph"] == "X" and e["ts"] <= hi and e["ts"] + e["dur"] >= lo]
    assert _slices(events) == _slices(expected) and 0 < len(expected) < len(ends)
    for start, finish in zip(*(iter([e for e in events if e["ph"] in "sf"]),) * 2):
        assert start["id"] == finish["id"] and lo <= start["ts"] <= hi and lo <= finish["ts"] <= hi
    assert {e["name"] for e in events if e["ph"] == "M"} == {e["name"] for e in whole
                                                             if e["ph"] == "M"}  # fmt: skip


def test_a_step_window_spans_those_steps(
    ranks: list[RankFiles], whole: list[dict], tmp_path: Path
) -> None:
    steps = [e for e in whole if e["ph"] == "X" and e["name"] == "ProfilerStep#1"
             and e["cat"] == "op" and e["pid"] in (0, 1)]  # fmt: skip
    lo, hi = min(e["ts"] for e in steps), max(e["ts"] + e["dur"] for e in steps)
    result = _run(ranks, tmp_path, window=WindowChoice.parse("step:1"))
    events = json.loads(Path(result.timeline).read_text())["traceEvents"]
    kept = [e for e in events if e["ph"] == "X"]
    assert kept and all(e["ts"] <= hi + 1e-3 and e["ts"] + e["dur"] >= lo - 1e-3 for e in kept)
    names = {e["name"] for e in kept}
    assert "ProfilerStep#1" in names and "ProfilerStep#2" not in names


def test_a_big_timeline_is_compressed_and_a_huge_one_warned_of(
    ranks: list[RankFiles], whole: list[dict], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    _run(ranks, tmp_path)  # an earlier run's timeline.json: replaced by the .gz
    monkeypatch.setattr(timeline_file, "GZIP_ABOVE_EVENTS", 10)
    monkeypatch.setattr(timeline_file, "WARN_ABOVE_BYTES", 1000)
    with caplog.at_level(logging.WARNING):
        result = _run(ranks, tmp_path)
    assert Path(result.timeline).name == "timeline.json.gz"
    assert not (tmp_path / "timeline.json").exists()
    assert json.loads(gzip.decompress(Path(result.timeline).read_bytes()))["traceEvents"] == whole
    assert "--timeline-window" in caplog.text and "Perfetto" in caplog.text


@pytest.mark.parametrize("window", ["5-3", "step:", "step:3-1", "abc"])
def test_a_bad_window_is_a_usage_error(
    ranks: list[RankFiles], tmp_path: Path, capsys: pytest.CaptureFixture, window: str
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--host-trace", str(ranks[0].host), "--device-trace", str(ranks[0].device),
              "--output-dir", str(tmp_path / "o"), "--timeline-window", window])  # fmt: skip
    assert done.value.code == 2
    assert "--timeline-window" in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (tmp_path / "o").exists()


def test_no_such_step_is_one_line(ranks: list[RankFiles], tmp_path: Path,
                                   capsys: pytest.CaptureFixture) -> None:  # fmt: skip
    with contextlib.redirect_stdout(io.StringIO()), pytest.raises(SystemExit) as done:
        main(["--host-trace", str(ranks[0].host), "--device-trace", str(ranks[0].device),
              "--output-dir", str(tmp_path / "o"), "--no-what-if", "--timeline-window",
              "step:40", "--log-level", "WARNING"])  # fmt: skip
    assert done.value.code == 1
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "step:40" in said[0] and "ProfilerStep" in said[0]


def test_without_matplotlib_the_pipeline_skips_the_picture_and_says_so(
    ranks: list[RankFiles], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    """matplotlib is the optional extra chakra[plot]: without it the pipeline writes every
    other output and a warning names the extra; chakra_sim --plot refuses in one line."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError
    with caplog.at_level(logging.WARNING):
        result = run_pipeline(ranks, tmp_path / "o", what_if=[])
    assert result.plot is None and not (tmp_path / "o" / "utilisation.png").exists()
    assert result.html is not None and "chakra[plot]" in caplog.text
    with pytest.raises(ChakraError, match=r"chakra\[plot\]"):
        plot_utilisation(simulate_files([tmp_path / "o" / "workload.0.et"]), tmp_path / "u.png")


def test_a_failed_write_on_the_writer_thread_is_raised_to_the_caller() -> None:
    """The timeline's text reaches the file on a second thread (compressing overlaps
    encoding): a write that fails there fails the caller, in order, and nothing is lost."""
    from chakra.pipeline.timeline_file import _Overlapped

    class Collected:
        def __init__(self) -> None:
            self.parts: list[str] = []

        def write(self, text: str) -> int:
            if text == "full":
                raise OSError("No space left on device")
            self.parts.append(text)
            return len(text)

    kept = Collected()
    stream = _Overlapped(kept)  # type: ignore[arg-type]
    for part in ("a", "b", "c"):
        stream.write(part)
    stream.close()
    assert kept.parts == ["a", "b", "c"] and stream.written == 3
    failing = _Overlapped(Collected())  # type: ignore[arg-type]
    failing.write("full")
    with pytest.raises(OSError, match="No space left"):
        failing.close()
