"""Simulate files: Chakra ET (``.et``, ``.et.gz``) or ET+ JSON (converted in memory)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any, Optional

import msgspec

from chakra.errors import PathLike
from chakra.simulate.astra_graph import build_astra_graph
from chakra.simulate.astra_network import AstraRing
from chakra.simulate.node_files import read_nodes
from chakra.simulate.replay import SimOptions, simulate
from chakra.simulate.sim_graph import SimGraph, build_graph
from chakra.simulate.sim_result import SimResult
from chakra.simulate.timeline import chrome_trace as chrome_trace  # re-exported

GraphBuilder = Callable[[Iterable[Any], int], SimGraph]


def load_graph(path: PathLike, rank: int, serialize_gpu: bool = False) -> SimGraph:
    """One rank's graph from an ``.et`` file (streamed) or from ET+ JSON."""
    return _load_graph(path, rank, partial(build_graph, serialize_gpu=serialize_gpu))


def load_astra_graph(path: PathLike, rank: int) -> SimGraph:
    """One rank's graph as ASTRA-sim sees it (:mod:`chakra.simulate.astra_graph`)."""
    return _load_graph(path, rank, build_astra_graph)


def _load_graph(path: PathLike, rank: int, build: GraphBuilder) -> SimGraph:
    return msgspec.structs.replace(read_nodes(path, rank, build), source=str(path))


def simulate_files(
    paths: Sequence[PathLike],
    serialize_gpu: bool = False,
    options: Optional[SimOptions] = None,
) -> SimResult:
    """:func:`~chakra.simulate.replay.simulate` one graph per rank (rank = position in
    ``paths``), together; ``options`` None: the defaults without the model-only run."""
    options = options or SimOptions(explain=False)
    return simulate([load_graph(p, rank, serialize_gpu) for rank, p in enumerate(paths)], options)


def simulate_astra_files(
    paths: Sequence[PathLike], ring: AstraRing, explain: bool = False
) -> SimResult:
    """Simulate one graph per rank (rank = position in ``paths``) with ASTRA-sim's resource
    model and ring (:mod:`chakra.simulate.astra_events`), reading the files as ASTRA-sim
    does: as they are, without the cross-rank fills :func:`chakra.ranks.files.
    simulate_agreed` applies. ``explain``: as :class:`~chakra.simulate.replay.SimOptions`
    says."""
    graphs = [load_astra_graph(p, rank) for rank, p in enumerate(paths)]
    return simulate(graphs, SimOptions(ring=ring, explain=explain))
