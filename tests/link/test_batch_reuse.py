"""A batch link rerun into the same folder reuses every rank whose manifest proves its ET+
(same inputs, options, version, ET+ as written) and links the others again, with no error;
the files are then byte-identical to an uninterrupted run's."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

import chakra.link.batch as batch
from chakra.cli.trace_link import main
from chakra.link.batch import Coverage, RankPair, link_ranks
from chakra.link.linked_trace import LinkOptions
from chakra.synth import SynthOptions, generate_job

RANKS = 3
MANIFEST = ".rank1.et_plus.manifest.json"


def _pairs(traces: Path) -> list[RankPair]:
    return [RankPair(r, traces / f"rank{r}.host_et.json", traces / f"rank{r}.kineto.json")
            for r in range(RANKS)]  # fmt: skip


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in folder.iterdir()}


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """A 3-rank job and the files of a batch never interrupted."""
    traces = tmp_path_factory.mktemp("traces")
    generate_job(SynthOptions(seed=4, ranks=RANKS, steps=1, ops_per_step=40), traces)
    out = tmp_path_factory.mktemp("reference")
    link_ranks(_pairs(traces), out, LinkOptions(), Coverage(), 1)
    return traces, _files(out)


@pytest.fixture
def linked_ranks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ranks :func:`link_files` links from now on (serial batches), in order."""
    real, ranks = batch.link_files, []

    def link_files(host: Any, device: Path, *args: Any, **kwargs: Any) -> Any:
        ranks.append(int(device.name.split(".")[0][len("rank") :]))
        return real(host, device, *args, **kwargs)

    monkeypatch.setattr(batch, "link_files", link_files)
    return ranks


def _link(traces: Path, out: Path, options: Optional[LinkOptions] = None) -> None:
    results = link_ranks(_pairs(traces), out, options or LinkOptions(), Coverage(), 1)
    assert [result.rank for result in results] == list(range(RANKS))
    assert not any(result.error for result in results)


def _copy(traces: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "traces"
    shutil.copytree(traces, copy)
    return copy


def test_a_rerun_after_an_interrupt_reuses_the_ranks_linked_before(
    job: tuple[Path, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    traces, reference = job
    real, calls = batch.link_files, [0]

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 2:  # while rank 1 links: rank 0 is written
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(batch, "link_files", interrupted)
        with pytest.raises(KeyboardInterrupt):
            _link(traces, tmp_path)
    assert sorted(_files(tmp_path)) == [".rank0.et_plus.manifest.json", "rank0.et_plus.json"]
    before = (tmp_path / "rank0.et_plus.json").stat()
    linked: list[int] = []
    monkeypatch.setattr(batch, "link_files", lambda *a, **k: linked.append(1) or real(*a, **k))
    with caplog.at_level(logging.INFO):
        _link(traces, tmp_path)
    assert len(linked) == RANKS - 1  # rank 0 not linked again
    after = (tmp_path / "rank0.et_plus.json").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert _files(tmp_path) == reference
    assert (
        f"reusing 1 of {RANKS} ranks (ET+ proven by their manifests in {tmp_path}: 0)"
        in caplog.messages
    )


def test_an_input_changed_by_one_byte_is_linked_again(
    job: tuple[Path, dict[str, bytes]], tmp_path: Path, linked_ranks: list[int],
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    traces = _copy(job[0], tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    _link(traces, out)
    host = traces / "rank1.host_et.json"
    data = host.read_bytes()
    assert data[2:3] == b" "
    host.write_bytes(data[:2] + b"\t" + data[3:])  # same size, same JSON, other bytes
    del linked_ranks[:]
    with caplog.at_level(logging.INFO):
        _link(traces, out)
    assert linked_ranks == [1]
    assert "rank 1: linked again (inputs changed)" in caplog.messages
    assert _files(out) != job[1]  # rank 1's manifest records the new input
    del linked_ranks[:]
    _link(traces, out)
    assert linked_ranks == []


def test_another_option_links_every_rank_again(
    job: tuple[Path, dict[str, bytes]], tmp_path: Path, linked_ranks: list[int]
) -> None:
    traces, reference = job
    _link(traces, tmp_path)
    assert linked_ranks == [0, 1, 2]
    _link(traces, tmp_path, LinkOptions(inferred=False))
    assert linked_ranks == [0, 1, 2] * 2
    _link(traces, tmp_path, LinkOptions(inferred=False))  # proven under these options
    assert linked_ranks == [0, 1, 2] * 2
    _link(traces, tmp_path)
    assert linked_ranks == [0, 1, 2] * 3
    assert _files(tmp_path) == reference


@pytest.mark.parametrize(
    ("name", "damage", "reason"),
    [
        ("rank1.et_plus.json", lambda data: data[:-1] + b"#", "ET+ modified"),
        ("rank1.et_plus.json", lambda data: b"", "ET+ modified"),
        (MANIFEST, lambda data: data[: len(data) // 2], "manifest unreadable"),
        (MANIFEST, lambda data: b"\x00\xff" * 8, "manifest unreadable"),
        (MANIFEST, lambda data: b'{"rank": 1}', "manifest unreadable"),
    ],
    ids=["et_plus_edited", "et_plus_emptied", "manifest_cut", "manifest_binary", "manifest_other"],
)  # fmt: skip
def test_a_damaged_rank_is_linked_again_without_error(
    job: tuple[Path, dict[str, bytes]], tmp_path: Path, linked_ranks: list[int],
    caplog: pytest.LogCaptureFixture, name: str, damage: Any, reason: str,
) -> None:  # fmt: skip
    traces, reference = job
    _link(traces, tmp_path)
    damaged = tmp_path / name
    damaged.write_bytes(damage(damaged.read_bytes()))
    del linked_ranks[:]
    with caplog.at_level(logging.INFO):
        _link(traces, tmp_path)
    assert linked_ranks == [1]
    assert f"rank 1: linked again ({reason})" in caplog.messages
    assert _files(tmp_path) == reference


def test_an_et_plus_without_manifest_is_linked_again(
    job: tuple[Path, dict[str, bytes]], tmp_path: Path, linked_ranks: list[int],
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    traces, reference = job
    _link(traces, tmp_path)
    (tmp_path / ".rank2.et_plus.manifest.json").unlink()  # e.g. an ET+ from another program
    del linked_ranks[:]
    with caplog.at_level(logging.INFO):
        _link(traces, tmp_path)
    assert linked_ranks == [2]
    assert "rank 2: linked again (no manifest)" in caplog.messages
    assert _files(tmp_path) == reference


def test_the_cli_rerun_reuses_every_rank_and_writes_the_same_files(
    job: tuple[Path, dict[str, bytes]], tmp_path: Path, linked_ranks: list[int],
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    hosts, devices, out = tmp_path / "hosts", tmp_path / "devices", tmp_path / "out"
    for folder, kind in ((hosts, "host_et"), (devices, "kineto")):
        folder.mkdir()
        for rank in range(RANKS):
            shutil.copy(job[0] / f"rank{rank}.{kind}.json", folder)
    argv = ["--host-dir", str(hosts), "--device-dir", str(devices), "--output-dir", str(out),
            "--report", str(tmp_path / "report.json"), "-j", "1"]  # fmt: skip
    with pytest.raises(SystemExit) as first:
        main(argv)
    assert first.value.code == 0
    printed = capsys.readouterr().out
    files = {**_files(out), "report.json": (tmp_path / "report.json").read_bytes()}
    del linked_ranks[:]
    with caplog.at_level(logging.INFO), pytest.raises(SystemExit) as second:
        main(argv)
    assert second.value.code == 0
    rerun = capsys.readouterr()
    assert linked_ranks == []
    assert rerun.out == printed  # the same line per rank, from the stored reports
    assert any(f"reusing {RANKS} of {RANKS} ranks" in line for line in caplog.messages)
    assert {**_files(out), "report.json": (tmp_path / "report.json").read_bytes()} == files


def test_a_rerun_in_workers_keeps_the_files_of_the_ranks_linked_before(
    job: tuple[Path, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces, reference = job
    real = batch.as_completed

    def as_completed(futures: Any) -> Iterator[Any]:
        yield next(iter(real(futures)))  # one rank done, then Ctrl-C
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(batch, "as_completed", as_completed)
        with pytest.raises(KeyboardInterrupt):
            link_ranks(_pairs(traces), tmp_path, LinkOptions(), Coverage(), 2)
    kept = {path.name: path.stat() for path in tmp_path.glob("rank*.et_plus.json")}
    assert kept
    link_ranks(_pairs(traces), tmp_path, LinkOptions(), Coverage(), 2)
    assert _files(tmp_path) == reference
    for name, before in kept.items():  # not written again
        after = (tmp_path / name).stat()
        assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def _lost_on_the_way_back(job: Any) -> Any:
    """``_run_one`` whose rank 1 finishes its files and hands them over, then is stopped
    before its result reaches the parent (a SIGTERM in that moment, under load)."""
    outcome = _REAL_RUN_ONE(job)
    if job.pair.rank == 1:
        assert outcome.pending  # its temporaries exist, under the parent's name
        raise KeyboardInterrupt
    return outcome


_REAL_RUN_ONE = batch._run_one
# found by name where the worker unpickles the task: it stands in for the real one there
_lost_on_the_way_back.__module__, _lost_on_the_way_back.__qualname__ = batch.__name__, "_run_one"


def test_files_handed_over_by_a_worker_stopped_before_its_result_came_back_are_removed(
    job: tuple[Path, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Their temporaries carry this (live) process's id, so no later run in it would take
    them for stale: the interrupted batch removes them itself."""
    traces, reference = job
    with monkeypatch.context() as patch:
        patch.setattr(batch, "_run_one", _lost_on_the_way_back)
        with pytest.raises(KeyboardInterrupt):
            link_ranks(_pairs(traces), tmp_path, LinkOptions(), Coverage(), 2)
    assert not [path.name for path in tmp_path.iterdir() if path.name.endswith(".partial")]
    link_ranks(_pairs(traces), tmp_path, LinkOptions(), Coverage(), 2)
    assert _files(tmp_path) == reference
