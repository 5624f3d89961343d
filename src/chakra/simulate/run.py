"""Simulate files: Chakra ET (``.et``, ``.et.gz``) or ET+ JSON (converted in memory)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any, Optional

import msgspec

from chakra.errors import PathLike
from chakra.simulate.astra_graph import build_astra_graph
from chakra.simulate.astra_network import AstraRing
from chakra.simulate.graph_build import build_graph
from chakra.simulate.graph_cache import cached_load, load_key
from chakra.simulate.load_checks import LoadOptions
from chakra.simulate.node_files import read_nodes
from chakra.simulate.rank_order import files_in_rank_order
from chakra.simulate.replay import SimOptions, simulate
from chakra.simulate.sim_graph import SimGraph
from chakra.simulate.sim_result import SimResult

GraphBuilder = Callable[[Iterable[Any], int], SimGraph]


def load_graph(
    path: PathLike, rank: int, serialize_gpu: bool = False, options: Optional[LoadOptions] = None
) -> SimGraph:
    """One rank's graph from an ``.et`` file (streamed) or from ET+ JSON, checked as
    ``options`` say (None: :class:`~chakra.simulate.load_checks.LoadOptions`' defaults, a
    graph ``chakra_validate --no-astra-sim`` rejects is refused); ``serialize_gpu`` or
    ``options.serialize_gpu``: all GPU nodes of a device on one slot."""
    options = load_options(options, serialize_gpu)
    build = partial(build_graph, options=options, source=str(path))
    return _load_graph(path, rank, build, options, "graph")


def load_astra_graph(path: PathLike, rank: int, options: Optional[LoadOptions] = None) -> SimGraph:
    """One rank's graph as ASTRA-sim sees it (:mod:`chakra.simulate.astra_graph`), checked
    as ``options`` say (as for :func:`load_graph`)."""
    options = options or LoadOptions()
    build = partial(build_astra_graph, options=options, source=str(path))
    return _load_graph(path, rank, build, options, "astra")


def load_options(options: Optional[LoadOptions], serialize_gpu: bool = False) -> LoadOptions:
    """``options`` (None: the defaults), with ``serialize_gpu`` when it is set."""
    options = options or LoadOptions()
    return msgspec.structs.replace(options, serialize_gpu=True) if serialize_gpu else options


def _load_graph(
    path: PathLike, rank: int, build: GraphBuilder, options: LoadOptions, builder: str
) -> SimGraph:
    """``build`` over the nodes of ``path``, or the graph cache's copy of what it built
    before (:mod:`chakra.simulate.graph_cache`) when ``options.cache``; ``builder`` names
    the builder in the cache's key."""
    if options.cache:
        key = load_key(builder, options)
        graph = cached_load(path, rank, key, partial(read_nodes, path, rank, build))
    else:
        graph = read_nodes(path, rank, build)
    return msgspec.structs.replace(graph, source=str(path))


def simulate_files(
    paths: Sequence[PathLike],
    serialize_gpu: bool = False,
    options: Optional[SimOptions] = None,
    load: Optional[LoadOptions] = None,
) -> SimResult:
    """:func:`~chakra.simulate.replay.simulate` one graph per rank, together, each file's
    rank from its metadata or name (:func:`chakra.simulate.rank_order.files_in_rank_order`, which
    raises RankOrderError); ``options`` None: the defaults without the model-only run;
    ``load``: how the files are read and checked (:func:`load_graph`)."""
    options = options or SimOptions(explain=False)
    load = load_options(load, serialize_gpu)
    ordered = files_in_rank_order(paths)
    return simulate([load_graph(p, rank, options=load) for rank, p in enumerate(ordered)], options)


def simulate_astra_files(
    paths: Sequence[PathLike],
    ring: AstraRing,
    explain: bool = False,
    load: Optional[LoadOptions] = None,
) -> SimResult:
    """Simulate one graph per rank (ranks as for :func:`simulate_files`) with ASTRA-sim's resource
    model and ring (:mod:`chakra.simulate.astra_events`), reading the files as ASTRA-sim
    does: as they are, without the cross-rank fills :func:`chakra.ranks.rank_read.
    simulate_agreed` applies. ``explain``: as :class:`~chakra.simulate.replay.SimOptions`
    says; ``load``: as for :func:`load_graph`."""
    ordered = files_in_rank_order(paths)
    graphs = [load_astra_graph(p, rank, load) for rank, p in enumerate(ordered)]
    return simulate(graphs, SimOptions(ring=ring, explain=explain))
