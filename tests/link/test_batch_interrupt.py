"""Batch linking interrupted (Ctrl-C, SIGTERM): the ranks linked before stay, each file
whole; the rank under way and temporaries do not."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import chakra.link.batch as batch
from chakra.link.batch import Coverage, RankPair, link_ranks
from chakra.link.linked_trace import LinkOptions
from chakra.synth import SynthOptions, generate_job


def _pairs(traces: Path) -> list[RankPair]:
    return [RankPair(r, traces / f"rank{r}.host_et.json", traces / f"rank{r}.kineto.json")
            for r in range(3)]  # fmt: skip


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """A 3-rank job and the files of a batch never interrupted."""
    traces = tmp_path_factory.mktemp("traces")
    generate_job(SynthOptions(seed=4, ranks=3, steps=1, ops_per_step=40), traces)
    out = tmp_path_factory.mktemp("reference")
    link_ranks(_pairs(traces), out, LinkOptions(), Coverage(), 1)
    return traces, {path.name: path.read_bytes() for path in out.iterdir()}


def test_an_interrupted_serial_batch_keeps_the_ranks_linked_before(
    job: tuple[Path, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    traces, reference = job
    real, calls = batch.link_files, [0]

    def link_files(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 3:  # while rank 2 links
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(batch, "link_files", link_files)
    with caplog.at_level(logging.INFO), pytest.raises(KeyboardInterrupt):
        link_ranks(_pairs(traces), tmp_path, LinkOptions(), Coverage(), 1)
    kept = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    assert sorted(kept) == [
        ".rank0.et_plus.manifest.json",  # each kept ET+ with its manifest (for the rerun)
        ".rank1.et_plus.manifest.json",
        "rank0.et_plus.json",
        "rank1.et_plus.json",
    ]
    assert all(kept[name] == reference[name] for name in kept)
    assert f"interrupted: kept the ranks linked before, in {tmp_path}: 0, 1" in caplog.messages


def test_an_interrupted_batch_in_workers_keeps_the_ranks_linked_before(
    job: tuple[Path, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces, reference = job
    real = batch.as_completed

    def as_completed(futures: Any) -> Iterator[Any]:
        yield next(iter(real(futures)))  # one rank done, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(batch, "as_completed", as_completed)
    with pytest.raises(KeyboardInterrupt):
        link_ranks(_pairs(traces), tmp_path, LinkOptions(), Coverage(), 2)
    kept = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    assert kept and set(kept) <= set(reference)  # no temporary
    assert all(kept[name] == reference[name] for name in kept)
