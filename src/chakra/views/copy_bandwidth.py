"""Memory-copy bandwidth per copy kind (HtoD, DtoH, DtoD, PtoP), measured beside simulated:
bytes copied over the copies' time. A copy is a GPU node named ``Memcpy <KIND> ...`` (as
Kineto names them); its size is its first output tensor's (else first input tensor's)
element count times element size, from the ``.et``'s tensor values
(``[id, storage, offset, numel, itemsize, device]``). Copies whose size is unknown are
counted apart and left out of the bandwidth."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Optional

import msgspec
import numpy as np

from chakra.errors import PathLike
from chakra.ingest.vocabulary import copy_direction
from chakra.simulate.node_files import read_nodes
from chakra.simulate.sim_result import SimResult

MEMCPY = "Memcpy "


class CopySizes(msgspec.Struct, frozen=True):
    """Per copy node of a graph (by id): its size in bytes (-1: unknown)."""

    node_ids: list[int]
    size_bytes: list[int]


class CopyBandwidth(msgspec.Struct, frozen=True):
    """One copy kind of one rank: ``copies`` in all, ``unsized`` of them without a known
    size; over the sized ones, ``size_bytes`` in all, their measured and simulated time
    (µs; measured None when a sized copy has no measured start) and bandwidth (GB/s,
    10^9 bytes per second; None for no time)."""

    rank: int
    kind: str
    copies: int
    unsized: int
    size_bytes: int
    measured_us: Optional[float]
    simulated_us: float
    measured_gbps: Optional[float]
    simulated_gbps: Optional[float]


def copy_kind(name: str) -> Optional[str]:
    """``HtoD`` of ``Memcpy HtoD (Pinned -> Device)`` (the linker's
    :func:`~chakra.ingest.vocabulary.copy_direction`); None for a node that is no copy."""
    return copy_direction(name) if name.startswith(MEMCPY) else None


def tensor_bytes(values_json: str) -> int:
    """The size of the first tensor among a node's input or output values (JSON text),
    -1 when there is none or it does not parse."""
    try:
        values = json.loads(values_json) if values_json else []
    except ValueError:
        return -1
    for value in values if isinstance(values, list) else []:
        if isinstance(value, list) and len(value) == 6:
            numel, itemsize = value[3], value[4]
            if isinstance(numel, int) and isinstance(itemsize, int) and numel >= 0 < itemsize:
                return numel * itemsize
    return -1


def _sizes(nodes: Iterable[Any], rank: int) -> CopySizes:
    ids, sizes = [], []
    for node in nodes:
        if copy_kind(node.name) is None:
            continue
        size = tensor_bytes(node.outputs.values)
        ids.append(node.id)
        sizes.append(size if size >= 0 else tensor_bytes(node.inputs.values))
    return CopySizes(ids, sizes)


def read_copy_sizes(path: PathLike) -> CopySizes:
    """The copy sizes of a ``.et`` or ET+ file (one more pass over its nodes)."""
    return read_nodes(path, 0, _sizes)


def _gbps(size_bytes: int, time_us: Optional[float]) -> Optional[float]:
    return size_bytes / time_us / 1000.0 if time_us else None


def rank_copy_bandwidth(result: SimResult, rank: int, sizes: CopySizes) -> list[CopyBandwidth]:
    """Per copy kind of the graph at position ``rank`` (kinds in name order)."""
    graph = result.graphs[rank]
    size_of = dict(zip(sizes.node_ids, sizes.size_bytes))
    spent = np.frombuffer(result.end[rank], np.float64) - np.frombuffer(
        result.start[rank], np.float64
    )
    kinds: dict[str, list[int]] = {}
    for i, name in enumerate(graph.names):
        kind = copy_kind(name)
        if kind is not None:
            kinds.setdefault(kind, []).append(i)
    out = []
    for kind in sorted(kinds):
        nodes = kinds[kind]
        sized = [i for i in nodes if size_of.get(graph.ids[i], -1) >= 0]
        total = sum(size_of[graph.ids[i]] for i in sized)
        timed = all(graph.measured_start_us[i] >= 0 for i in sized)
        measured = float(sum(graph.duration_us[i] for i in sized)) if timed else None
        simulated = float(spent[sized].sum()) if sized else 0.0
        out.append(
            CopyBandwidth(
                graph.rank,
                kind,
                len(nodes),
                len(nodes) - len(sized),
                total,
                measured,
                simulated,
                _gbps(total, measured),
                _gbps(total, simulated),
            )
        )
    return out


def copy_bandwidth(result: SimResult, sizes: Sequence[CopySizes]) -> list[CopyBandwidth]:
    """:func:`rank_copy_bandwidth` of every rank (``sizes``: per rank, in rank order)."""
    out: list[CopyBandwidth] = []
    for r, rank_sizes in enumerate(sizes):
        out += rank_copy_bandwidth(result, r, rank_sizes)
    return out
