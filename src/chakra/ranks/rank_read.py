"""One pass over a rank's ``.et``: its simulation graph and its communication records
together, so that a job's files are read once where reading the records for the cross-rank
agreement, then the graphs, read them twice. The pipeline's rank workers read the file they
just wrote this way, beside the other ranks' linking, and hand the result to the parent;
only the ranks the agreement then fills are read again. ``chakra_sim`` on several ranks
reads them this way too (:func:`load_agreed`), and keeps the records beside the graph in
its graph cache (:mod:`chakra.simulate.graph_cache`): a rerun reads neither from the files."""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any, Optional

import msgspec

from chakra.errors import ChakraError, PathLike, read_every_input
from chakra.et import EtReader
from chakra.ingest.detect import TraceKind, sniff_kind
from chakra.ranks.agree import Agreement, CommRecord, agree
from chakra.ranks.files import agree_files, comm_records, log, patched, recording
from chakra.simulate.graph_build import build_graph
from chakra.simulate.graph_cache import Loaded, cached_read, load_key
from chakra.simulate.load_checks import LoadOptions
from chakra.simulate.node_files import read_nodes
from chakra.simulate.rank_order import files_in_rank_order
from chakra.simulate.replay import SimOptions, simulate
from chakra.simulate.run import load_graph, load_options
from chakra.simulate.sim_graph import SimGraph, SimulationError
from chakra.simulate.sim_result import SimResult

logger = logging.getLogger(__name__)

#: The builder named in the graph cache's key of an entry that holds the records too.
_GRAPH_AND_RECORDS = "graph+comm records"
_RECORDS_ENCODER = msgspec.msgpack.Encoder()
_RECORDS_DECODER = msgspec.msgpack.Decoder(list[CommRecord])


class RankRead(msgspec.Struct, frozen=True):
    """What one pass over ``path`` gave: the graph :func:`chakra.simulate.load_graph` builds
    (rank = ``graph.rank``) and the file's communication records in file order."""

    path: str
    graph: SimGraph
    records: list[CommRecord]


class _Records(msgspec.Struct, frozen=True):
    """What :func:`load_agreed` read of one file: its graph and records, or only the
    records (``graph`` None) where the graph was refused."""

    graph: Optional[SimGraph]
    records: list[CommRecord]


def read_rank(
    path: PathLike, rank: int, options: Optional[LoadOptions] = None, shapes: bool = False
) -> RankRead:
    """``path`` read once (``rank``: its position in rank order), checked as ``options`` say
    (None: the defaults; ``options.cache``: the graph and records come from the graph cache,
    or go there); ``shapes``: the graph keeps each node's input shapes too (what the
    timeline shows, read in the same pass; never cached). Raises what
    :func:`chakra.simulate.load_graph` raises."""
    options = options or LoadOptions()
    if not options.cache or shapes:
        return _read_rank(path, rank, options, shapes)

    def read() -> Loaded:
        done = _read_rank(path, rank, options, shapes=False)
        return Loaded(done.graph, _RECORDS_ENCODER.encode(done.records))

    loaded = cached_read(path, rank, load_key(_GRAPH_AND_RECORDS, options), read)
    try:
        records = _RECORDS_DECODER.decode(loaded.extra)
    except msgspec.DecodeError as exc:  # an entry of other bytes under a matching key
        logger.debug("graph cache: the records of %s do not decode (%s)", path, exc)
        return _read_rank(path, rank, options, shapes=False)
    graph = msgspec.structs.replace(loaded.graph, source=str(path))
    return RankRead(str(path), graph, records)


def _read_rank(path: PathLike, rank: int, options: LoadOptions, shapes: bool) -> RankRead:
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


def simulate_agreed(
    paths: Sequence[PathLike],
    serialize_gpu: bool = False,
    options: Optional[SimOptions] = None,
    load: Optional[LoadOptions] = None,
) -> SimResult:
    """Simulate the ranks together (:func:`chakra.simulate.simulate` with ``options``) with
    the agreement's fills applied to the nodes read (the files are left as they are);
    ``load``: how they are read and checked (:func:`chakra.simulate.load_graph`)."""
    return simulate(load_agreed(paths, serialize_gpu, load), options)


def load_agreed(
    paths: Sequence[PathLike], serialize_gpu: bool = False, load: Optional[LoadOptions] = None
) -> list[SimGraph]:
    """One graph per rank (each file's rank from its metadata or name:
    :func:`chakra.simulate.rank_order.files_in_rank_order`) with the agreement's fills
    applied to the nodes read (the files are left as they are), read and checked as
    ``load`` says (:func:`chakra.simulate.load_graph`). Several Chakra ET files are read
    once each (:func:`read_rank`, checked strictly so that nothing is logged before the
    agreement is); a rank the agreement fills, or whose graph that read refuses, is built
    again from its file, with the fills; anything else (one file, ET+) is read as given."""
    load = load_options(load, serialize_gpu)
    paths = files_in_rank_order(paths)
    kinds = {sniff_kind(p) for p in paths}
    ranked = list(enumerate(paths))
    if len(paths) < 2 or kinds != {TraceKind.CHAKRA_ET}:
        return read_every_input(ranked, lambda item: load_graph(item[1], item[0], options=load))
    strict = msgspec.structs.replace(load, lenient=False)
    reads = read_every_input(ranked, lambda item: _read_or_records(item[1], item[0], strict))
    agreement = agree([read.records for read in reads])
    log(agreement)

    def graph(item: tuple[int, _Records]) -> SimGraph:
        rank, read = item
        path, fills = str(paths[rank]), agreement.fills.get(rank)
        if not fills and read.graph is not None:
            return read.graph
        if not fills:  # refused by the strict read: the load as asked says why, or warns
            return load_graph(path, rank, options=load)
        with EtReader(path) as reader:
            try:
                built = build_graph(patched(reader, fills), rank, options=load, source=path)
            except SimulationError as exc:
                raise SimulationError(f"{path}: {exc}") from exc
            return msgspec.structs.replace(built, source=path)

    return read_every_input(list(enumerate(reads)), graph)


def _read_or_records(path: PathLike, rank: int, options: LoadOptions) -> _Records:
    """The rank's graph and records in one pass; where the graph is refused, only the
    records (the graph is then built after the agreement, which may fill what it lacks)."""
    try:
        read = read_rank(path, rank, options)
    except SimulationError:
        return _Records(None, comm_records(path))
    return _Records(read.graph, read.records)
