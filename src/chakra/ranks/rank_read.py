"""One pass over a rank's ``.et``: its simulation graph and its communication records
together, so that a job's files are read once where reading the records for the cross-rank
agreement, then the graphs, read them twice. The pipeline's rank workers read the file they
just wrote this way, beside the other ranks' linking, and hand the result to the parent;
only the ranks the agreement then fills are read again."""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any, Optional

import msgspec

from chakra.errors import ChakraError, PathLike
from chakra.ranks.agree import Agreement, CommRecord, agree
from chakra.ranks.files import agree_files, log, recording
from chakra.simulate.graph_build import build_graph
from chakra.simulate.load_checks import LoadOptions
from chakra.simulate.node_files import read_nodes
from chakra.simulate.run import load_graph
from chakra.simulate.sim_graph import SimGraph

logger = logging.getLogger(__name__)


class RankRead(msgspec.Struct, frozen=True):
    """What one pass over ``path`` gave: the graph :func:`chakra.simulate.load_graph` builds
    (rank = ``graph.rank``) and the file's communication records in file order."""

    path: str
    graph: SimGraph
    records: list[CommRecord]


def read_rank(
    path: PathLike, rank: int, options: Optional[LoadOptions] = None, shapes: bool = False
) -> RankRead:
    """``path`` read once (``rank``: its position in rank order), checked as ``options`` say
    (None: the defaults); ``shapes``: the graph keeps each node's input shapes too (what the
    timeline shows, read in the same pass). Raises what :func:`chakra.simulate.load_graph`
    raises."""
    options = options or LoadOptions()
    records: list[CommRecord] = []
    kept: Optional[list[str]] = [] if shapes else None

    def build(nodes: Iterable[Any], rank: int) -> SimGraph:
        nodes = recording(nodes, records)
        if kept is not None:
            nodes = _keeping_shapes(nodes, kept)
        return build_graph(nodes, rank, options=options, source=str(path))

    graph = read_nodes(path, rank, build)
    graph = msgspec.structs.replace(graph, source=str(path), input_shapes=kept)
    return RankRead(str(path), graph, records)


def _keeping_shapes(nodes: Iterable[Any], shapes: list[str]) -> Iterator[Any]:
    """``nodes`` unchanged, appending each one's ``inputs.shapes`` text to ``shapes`` (one
    string object per distinct text, as :func:`chakra.simulate.selection.with_input_shapes`
    keeps them)."""
    seen: dict[str, str] = {}
    for node in nodes:
        text = node.inputs.shapes
        shapes.append(seen.setdefault(text, text))
        yield node


def try_read_rank(path: PathLike, rank: int, shapes: bool = False) -> Optional[RankRead]:
    """:func:`read_rank` with the default checks, or None where it raises: the reader of
    the whole job then reads that file again, and reports what is wrong where it always
    has."""
    try:
        return read_rank(path, rank, shapes=shapes)
    except ChakraError as exc:
        logger.debug("%s: not read ahead (%s)", path, exc)
        return None


def agree_reads(paths: Sequence[PathLike], reads: Sequence[Optional[RankRead]]) -> Agreement:
    """:func:`chakra.ranks.agree_files` over ``paths`` (in rank order), from the records of
    their ``reads`` (the i-th read: of the i-th path) when every file has one, else from the
    files."""
    if len(reads) != len(paths) or any(
        read is None or read.path != str(path) for path, read in zip(paths, reads)
    ):
        return agree_files(paths)
    agreement = agree([read.records for read in reads])  # type: ignore[union-attr]
    log(agreement)
    return agreement


def graphs_of(
    paths: Sequence[PathLike], reads: Sequence[Optional[RankRead]], again: Collection[str]
) -> list[SimGraph]:
    """One graph per file of ``paths`` (in rank order): the read of that file at that
    position among ``reads``, else (none, or the file is in ``again``: rewritten since)
    loaded from the file with the defaults."""
    by_path = {read.path: read for read in reads if read is not None}
    graphs = []
    for rank, path in enumerate(paths):
        read = by_path.get(str(path))
        if read is not None and read.graph.rank == rank and str(path) not in again:
            graphs.append(read.graph)  # type: ignore[union-attr]
        else:
            graphs.append(load_graph(path, rank))
    return graphs
