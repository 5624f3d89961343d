"""With ``jobs`` above 1 the pipeline writes the timeline in a forked process while it draws
the other views (:func:`chakra.pipeline.timeline_file.timeline_beside`): the same bytes as
one process writes, the same warnings (logged by the parent), an error in the timeline's
process reported as the parent's would be, and no job file when it fails."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import pytest

from chakra.errors import ChakraError
from chakra.pipeline import RankFiles, run_pipeline, timeline_file
from chakra.pipeline.option_values import TIMELINE_ALL, TIMELINE_AUTO
from chakra.pipeline.timeline_file import (
    TimelineOptions,
    known_without_job,
    ranks_known_shown,
    timeline_ranks,
)
from chakra.synth import SynthOptions, generate_job
from chakra.views import timeline_args


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> list[RankFiles]:
    folder = tmp_path_factory.mktemp("beside")
    summary = generate_job(SynthOptions(seed=6, ranks=2, steps=2, ops_per_step=50), folder)
    return [RankFiles(r.rank, r.host_et, r.kineto) for r in summary.ranks]


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


@pytest.mark.parametrize("compressed", [False, True])
def test_one_process_and_two_write_the_same_bytes(
    ranks: list[RankFiles], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compressed: bool
) -> None:
    if compressed:  # timeline.json.gz
        monkeypatch.setattr(timeline_file, "GZIP_ABOVE_EVENTS", 10)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    one = run_pipeline(ranks, tmp_path / "one", jobs=1)
    two = run_pipeline(ranks, tmp_path / "two", jobs=2)
    assert one.timeline is not None and two.timeline is not None
    assert (
        one.timeline.name
        == two.timeline.name
        == ("timeline.json.gz" if compressed else "timeline.json")
    )
    assert _files(tmp_path / "one") == _files(tmp_path / "two")
    assert not list(scratch.iterdir())  # the timeline's process wrote into a scratch folder


def test_the_parent_warns_of_a_big_timeline(
    ranks: list[RankFiles], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    monkeypatch.setattr(timeline_file, "WARN_ABOVE_BYTES", 1000)
    with caplog.at_level(logging.WARNING, logger="chakra.pipeline.timeline_file"):
        run_pipeline(ranks, tmp_path, jobs=2, plot=False)
    assert any("Perfetto's UI may not load it" in r.message for r in caplog.records)


def test_an_error_writing_the_timeline_fails_the_job_and_leaves_no_job_file(
    ranks: list[RankFiles], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise ChakraError("timeline.json: cannot write it as JSON: Out of range float values")

    monkeypatch.setattr(timeline_file, "chrome_trace", refuse)  # inherited by the fork
    with pytest.raises(ChakraError, match="cannot write it as JSON"):
        run_pipeline(ranks, tmp_path, jobs=2, plot=False)
    names = {path.name for path in tmp_path.iterdir()}
    assert not names & {"report.json", "report.html", "timeline.json", "timeline.json.gz"}
    assert "workload.0.et" in names  # the finished ranks stay


def test_the_timeline_takes_the_shapes_the_rank_workers_read(
    ranks: list[RankFiles], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = run_pipeline(ranks, tmp_path / "one", plot=False, html=False)

    def unread(*args: object) -> None:
        raise AssertionError("the timeline read an .et again for its input shapes")

    monkeypatch.setattr(timeline_args, "read_nodes", unread)
    again = run_pipeline(ranks, tmp_path / "two", plot=False, html=False)
    assert reference.timeline is not None and again.timeline is not None
    assert again.timeline.read_bytes() == reference.timeline.read_bytes()
    assert b'"shapes": "[[' in again.timeline.read_bytes()


@pytest.mark.parametrize(
    ("write", "choice", "count", "known"),
    [(False, TIMELINE_ALL, 4, set()), (True, TIMELINE_ALL, 40, set(range(40))),
     (True, TIMELINE_AUTO, 4, {0, 1, 2, 3}), (True, TIMELINE_AUTO, 40, set()),
     (True, (2, 5), 40, {2, 5})],
)  # fmt: skip
def test_the_ranks_known_to_be_shown_before_the_replay(
    write: bool, choice: object, count: int, known: set[int]
) -> None:
    options = TimelineOptions(write=write, ranks=choice)  # type: ignore[arg-type]
    assert ranks_known_shown(options, list(range(count))) == known


def test_the_ranks_of_a_big_job_wait_for_its_summary() -> None:
    auto = TimelineOptions(ranks=TIMELINE_AUTO)
    assert known_without_job(auto, 16) and not known_without_job(auto, 17)
    assert timeline_ranks(auto, None, 16) is None  # every rank: known at once
    with pytest.raises(ValueError, match="the job's summary picks the ranks shown"):
        timeline_ranks(auto, None, 17)
    assert timeline_ranks(TimelineOptions(ranks=(3, 9)), None, 40) == (3, 9)
