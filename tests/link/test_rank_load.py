"""Loading a rank's two traces side by side gives what loading them one after the other
gives: the same traces, the same error (the Kineto trace's first when both are bad), and
no scratch file left behind."""

from __future__ import annotations

import multiprocessing
import tempfile
from pathlib import Path

import pytest

from chakra.errors import ChakraError
from chakra.link import rank_load
from chakra.link.rank_load import load_rank_traces
from chakra.synth import SynthOptions, generate_job


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder the loads' scratch files go to (checked empty by the tests)."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def rank(tmp_path: Path) -> tuple[Path, Path]:
    options = SynthOptions(seed=8, ranks=1, steps=2, ops_per_step=60, worker_threads=True)
    made = generate_job(options, tmp_path / "job").ranks[0]
    return made.host_et, made.kineto


def _bad(path: Path) -> Path:
    path.write_text('{"nodes": [')
    return path


def _error(host: Path, device: Path, processes: int) -> str:
    with pytest.raises(ChakraError) as raised:
        load_rank_traces(host, device, processes)
    return str(raised.value)


def test_side_by_side_loads_the_same_traces(rank: tuple[Path, Path], scratch: Path) -> None:
    one_after_the_other = load_rank_traces(*rank, processes=1)
    side_by_side = load_rank_traces(*rank, processes=2)
    assert side_by_side.host == one_after_the_other.host
    assert side_by_side.device == one_after_the_other.device
    assert len(side_by_side.device.gpu_ops) > 0
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("bad", ["host", "device", "both"])
def test_a_bad_trace_fails_as_one_after_the_other(
    rank: tuple[Path, Path], scratch: Path, tmp_path: Path, bad: str
) -> None:
    host, device = rank
    if bad in ("host", "both"):
        host = _bad(tmp_path / "bad.host_et.json")
    if bad in ("device", "both"):
        device = _bad(tmp_path / "bad.kineto.json")
    sequential = _error(host, device, 1)
    assert _error(host, device, 2) == sequential
    assert ("bad.kineto.json" if bad != "host" else "bad.host_et.json") in sequential
    assert list(scratch.iterdir()) == []


def test_without_fork_the_traces_load_here(
    rank: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_fork(work: object) -> None:
        raise AssertionError("forked where processes cannot fork")

    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    monkeypatch.setattr(rank_load, "forked", no_fork)
    loaded = load_rank_traces(*rank, processes=2)
    assert loaded == load_rank_traces(*rank, processes=1)
