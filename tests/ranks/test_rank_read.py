"""One pass over a rank's ``.et`` (:mod:`chakra.ranks.rank_read`) gives what the two passes
it replaces gave: the graph :func:`load_graph` builds and the records :func:`comm_records`
reads; a file rewritten since, or one without a read, is read again."""

from __future__ import annotations

from array import array
from pathlib import Path

import msgspec
import pytest

from chakra.pipeline import RankFiles, run_pipeline
from chakra.ranks import agree_files, comm_records
from chakra.ranks.rank_read import agree_reads, graphs_of, read_rank, try_read_rank
from chakra.simulate.run import load_graph
from chakra.synth import SynthOptions, generate_job
from chakra.views.timeline_args import input_shapes


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
