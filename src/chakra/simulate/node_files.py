"""The nodes of one rank's file, handed to a builder: a Chakra ET (``.et``, ``.et.gz``)
streamed, ET+ JSON converted in memory. Graph loading reads them this way, and so does a
what-if rule that asks for what the graph does not keep (input shapes) later."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from chakra.errors import PathLike, SimulationError
from chakra.et.reader import EtReader
from chakra.ingest.detect import TraceKind, sniff_kind

T = TypeVar("T")


def read_nodes(path: PathLike, rank: int, build: Callable[[Iterable[Any], int], T]) -> T:
    """``build(nodes, rank)`` over the nodes of ``path`` in file order (for ET+ JSON, the
    order its conversion writes them). A SimulationError ``build`` raises names ``path``."""
    try:
        if sniff_kind(path) is TraceKind.CHAKRA_ET:
            with EtReader(path, f"loading rank {rank} from {path}") as reader:
                return build(reader, rank)
        from chakra.convert import ConvertOptions, convert_et_plus, load_et_plus

        graph = convert_et_plus(load_et_plus(path), ConvertOptions())
        return build(graph.nodes, rank)
    except SimulationError as exc:
        raise SimulationError(f"{path}: {exc}") from exc
