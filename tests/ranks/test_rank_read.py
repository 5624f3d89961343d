"""One pass over a rank's ``.et`` (:mod:`chakra.ranks.rank_read`) gives what the two passes
it replaces gave: the graph :func:`load_graph` builds and the records :func:`comm_records`
reads; a file rewritten since, or one without a read, is read again."""

from __future__ import annotations

import contextlib
import logging
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from chakra.convert import ConvertOptions, convert_file
from chakra.errors import ChakraError
from chakra.et import EtReader
from chakra.link.batch import link_files
from chakra.link.linked_trace import LinkOptions
from chakra.pipeline import RankFiles, run_pipeline
from chakra.ranks import agree_files, comm_records, patched
from chakra.ranks.rank_read import (
    agree_reads,
    graphs_of,
    load_agreed,
    read_rank,
    try_read_rank,
)
from chakra.simulate import graph_cache, simulate
from chakra.simulate.graph_build import build_graph
from chakra.simulate.load_checks import LoadOptions
from chakra.simulate.run import load_graph
from chakra.simulate.sim_graph import SimulationError
from chakra.synth import SynthOptions, generate_job
from chakra.synth.options import options_with_vintages
from chakra.views.timeline_args import input_shapes
from tests.simulate.test_load_checks import CASES, node, write


@pytest.fixture(scope="module")
def ets(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A 4-rank job's ``.et`` files (collectives in groups of 4 and of 2), in rank order."""
    folder = tmp_path_factory.mktemp("rank_read")
    summary = generate_job(SynthOptions(seed=4, ranks=4, ops_per_step=60), folder / "traces")
    ranks = [RankFiles(r.rank, r.host_et, r.kineto) for r in summary.ranks]
    run_pipeline(ranks, folder / "out", plot=False, html=False, timeline=False, what_if=[])
    return [folder / "out" / f"workload.{rank}.et" for rank in range(4)]


def test_one_pass_gives_the_graph_and_the_records_of_two(ets: list[Path]) -> None:
    for rank, path in enumerate(ets):
        read = read_rank(path, rank)
        assert read.graph == load_graph(path, rank)
        assert read.records == comm_records(path) and read.records  # collectives there
        assert read.path == str(path) and read.graph.source == str(path)
    reads = [read_rank(path, rank) for rank, path in enumerate(ets)]
    assert agree_reads(ets, reads) == agree_files(ets)


def test_a_file_without_a_read_or_rewritten_since_is_read_again(ets: list[Path]) -> None:
    reads = [read_rank(path, rank) for rank, path in enumerate(ets)]
    # a read whose graph is marked (every duration 0) shows where a read was used
    marked = [msgspec.structs.replace(r, graph=msgspec.structs.replace(
        r.graph, duration_us=array("d", bytes(8 * len(r.graph.duration_us))))) for r in reads
    ]  # fmt: skip
    graphs = graphs_of(ets, [marked[0], None, marked[2], marked[3]], again={str(ets[3])})
    used = [sum(g.duration_us) == 0 for g in graphs]
    assert used == [True, False, True, False]
    assert list(graphs[1].duration_us) == list(load_graph(ets[1], 1).duration_us)
    # reads are found by file, in any order; a read of the file at another position is not used
    assert [sum(g.duration_us) for g in graphs_of(ets[:2], marked[1::-1], again=set())] == [0, 0]
    assert sum(graphs_of(ets[1:2], marked[1:2], again=set())[0].duration_us) > 0


def test_records_come_from_the_files_when_a_read_is_missing(ets: list[Path]) -> None:
    reads = [read_rank(path, rank) for rank, path in enumerate(ets)]
    emptied = [msgspec.structs.replace(r, records=[]) for r in reads]
    assert agree_reads(ets, [*emptied[:3], None]) == agree_files(ets)
    assert agree_reads(ets, emptied) != agree_files(ets)  # the reads' records were used


def test_an_unreadable_file_is_left_to_the_reader_of_the_whole_job(tmp_path: Path) -> None:
    bad = tmp_path / "workload.0.et"
    bad.write_bytes(b"\x07not a chakra et")
    assert try_read_rank(bad, 0) is None


def test_a_read_for_the_timeline_keeps_the_shapes_the_timeline_would_read(
    ets: list[Path],
) -> None:
    read = read_rank(ets[1], 1, shapes=True)
    plain = load_graph(ets[1], 1)
    assert plain.input_shapes is None
    assert read.graph.input_shapes == input_shapes(plain)
    assert any(text.strip("[], ") for text in read.graph.input_shapes)  # dimensions there
    assert msgspec.structs.replace(read.graph, input_shapes=None) == plain


@contextlib.contextmanager
def caplog_warnings() -> Iterator[list[str]]:
    """The warnings chakra logs while the block runs."""
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    handler, chakra_logger = Keep(logging.WARNING), logging.getLogger("chakra")
    chakra_logger.addHandler(handler)
    try:
        yield seen
    finally:
        chakra_logger.removeHandler(handler)


class _Opened:
    """Counts the passes over the nodes of ``.et`` files (every reader is an EtReader;
    opening one for its metadata alone, as rank ordering does, is not counted)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        nodes = EtReader.__iter__

        def counting(reader: EtReader) -> Iterator[Any]:
            self.paths.append(str(reader.path))
            return nodes(reader)

        monkeypatch.setattr(EtReader, "__iter__", counting)

    def counts(self, paths: list[Path]) -> list[int]:
        return [self.paths.count(str(path)) for path in paths]


def test_several_ranks_are_read_once_each_and_a_cached_rerun_reads_none(
    ets: list[Path], graph_cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = [load_graph(path, rank) for rank, path in enumerate(ets)]  # nothing to fill
    opened = _Opened(monkeypatch)
    assert load_agreed(ets) == expected
    assert opened.counts(ets) == [1, 1, 1, 1]  # records and graph in one pass (was 2 each)
    cached = LoadOptions(cache=True)
    assert load_agreed(ets, load=cached) == expected
    assert opened.counts(ets) == [2, 2, 2, 2]
    assert len(list(graph_cache_dir.glob("*.graph"))) == 4  # graph and records, per rank
    with caplog_warnings() as warnings:
        assert load_agreed(ets, load=cached) == expected
    assert opened.counts(ets) == [2, 2, 2, 2] and warnings == []  # the rerun read no node


def test_cached_records_that_do_not_decode_are_read_from_the_file(
    ets: list[Path], graph_cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cached = LoadOptions(cache=True)
    first = read_rank(ets[2], 2, cached)
    (entry_path,) = graph_cache_dir.glob("*.graph")
    entry = graph_cache._DECODER.decode(entry_path.read_bytes())
    entry.extra = b"\xc1"  # a byte msgpack never uses
    entry_path.write_bytes(graph_cache._ENCODER.encode(entry))
    opened = _Opened(monkeypatch)
    again = read_rank(ets[2], 2, cached)
    assert opened.counts([ets[2]]) == [1] and again == first
    assert again.records == comm_records(ets[2]) and again.records


def test_ranks_the_agreement_fills_are_built_again_with_the_fills(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 1.0.1-era job converted rank by rank (no agreement written into the files): the
    ranks get their fills as they are read, and only those ranks are read twice."""
    options = options_with_vintages(SynthOptions(seed=5, ranks=4, steps=1, ops_per_step=70),
                                    ["legacy_1_0_1"])  # fmt: skip
    summary = generate_job(options, tmp_path / "traces")
    paths = []
    for rank in summary.ranks:
        et_plus, et = tmp_path / f"rank{rank.rank}.et_plus.json", tmp_path / f"w.{rank.rank}.et"
        link_files(rank.host_et, rank.kineto, et_plus, LinkOptions())
        convert_file(et_plus, et, ConvertOptions(rank=rank.rank))
        paths.append(et)
    agreement = agree_files(paths)
    filled = sorted(agreement.fills)
    assert filled  # the send/recv ends at least
    expected = []
    for rank, path in enumerate(paths):  # as the files would be once the fills are written
        with EtReader(path) as reader:
            nodes = list(patched(reader, agreement.fills.get(rank, {})))
        graph = build_graph(nodes, rank, options=LoadOptions())
        expected.append(msgspec.structs.replace(graph, source=str(path)))
    opened = _Opened(monkeypatch)
    graphs = load_agreed(paths)
    assert graphs == expected
    assert opened.counts(paths) == [2 if rank in filled else 1 for rank in range(4)]
    simulate(graphs)  # the ranks meet


def test_a_rank_the_checks_refuse_is_loaded_as_asked_with_one_warning(
    tmp_path: Path, graph_cache_dir: Path
) -> None:
    """The one pass checks strictly (nothing is logged before the agreement's lines); a
    rank it refuses is loaded as asked: refused in the same words, or with ``lenient``
    simulated with one warning, not two."""
    good = write(tmp_path / "workload.0.et", [node(1), node(2, deps=(1,))])
    bad = write(tmp_path / "workload.1.et", CASES["self_dep"]())
    with pytest.raises(SimulationError) as alone:
        load_graph(bad, 1)
    with pytest.raises(ChakraError) as together:
        load_agreed([good, bad])
    assert str(alone.value) in str(together.value)
    for options in (LoadOptions(lenient=True), LoadOptions(lenient=True, cache=True)):
        with caplog_warnings() as warnings:
            graphs = load_agreed([bad, good], load=options)  # given in any order
        (line,) = warnings
        assert line.startswith(f"{bad}: rank 1: simulating a graph that fails")
        assert graphs == [load_graph(good, 0), load_graph(bad, 1, options=options)]
