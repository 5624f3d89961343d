"""The ASTRA-sim ring that reproduces the measured collectives: one link bandwidth, fitted
over every ring collective of a job, with the per-hop latency fixed (run.py's 500 ns).

Each collective's measured transfer is its time in the replay of the full graphs (from
the moment its last member arrived: the simulator's meeting), the median over its members.
ASTRA-sim's ring (:class:`~chakra.simulate.astra_network.AstraRing`) times a collective as a
fixed part plus a part inversely proportional to the bandwidth: ``c + b / gbps``, where
``c`` and ``b`` come from the ring itself (at an unbounded bandwidth, and the difference at 1
GB/s); the fitted ``1 / gbps`` is the least-squares one over all collectives. It is how a
measured step becomes an ASTRA-sim baseline: run ASTRA-sim with that bandwidth on the fold
(:mod:`chakra.simulate.fold`), then vary it.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any, Optional

import msgspec

from chakra.et.attributes import attr_value
from chakra.et.schema import NodeType
from chakra.simulate.astra_network import RING_COLLECTIVES, AstraRing
from chakra.simulate.sim_result import SimResult

#: run.py's per-hop latency (``--latency-ns``), kept in the fit.
LATENCY_NS = 500.0
_UNBOUNDED_GBPS = 1e12


class FittedRing(msgspec.Struct, frozen=True):
    """The fitted ring and how well it reproduces the collectives it was fitted on:
    ``collectives`` fitted, the median and largest |error| of their modelled time (%)."""

    ring: AstraRing
    collectives: int
    median_error_pct: float
    max_error_pct: float


class _Collective(msgspec.Struct):
    comm_type: int
    size_bytes: int
    members: list[int] = []
    transfers_us: list[float] = []


def fitted_ring(nodes_by_rank: Sequence[Sequence[Any]], result: SimResult) -> Optional[FittedRing]:
    """The fit over the ring collectives of ``nodes_by_rank`` (the full graphs, rank order)
    timed by ``result`` (their joint replay); None when the job has none with a size, or the
    fit finds no positive bandwidth."""
    collectives = _collectives(nodes_by_rank, result)
    npus = max(len(nodes_by_rank), 1)
    terms = []
    for c in collectives:
        fixed = _model_us(AstraRing(_UNBOUNDED_GBPS, LATENCY_NS, npus), c)
        per_gbps = _model_us(AstraRing(1.0, LATENCY_NS, npus), c) - fixed
        terms.append((fixed, per_gbps, statistics.median(c.transfers_us)))
    weight = sum(b * b for _, b, _ in terms)
    if not terms or weight <= 0:
        return None
    inverse = sum(b * (measured - fixed) for fixed, b, measured in terms) / weight
    if inverse <= 0:
        return None
    ring = AstraRing(1.0 / inverse, LATENCY_NS, npus)
    errors = [abs(_model_us(ring, c) / statistics.median(c.transfers_us) - 1) * 100
              for c in collectives if statistics.median(c.transfers_us) > 0]  # fmt: skip
    return FittedRing(ring, len(collectives), statistics.median(errors or [0.0]),
                      max(errors or [0.0]))  # fmt: skip


def _model_us(ring: AstraRing, collective: _Collective) -> float:
    members = sorted(collective.members)
    ends = ring.collective_ends_ns(collective.comm_type, collective.size_bytes, members,
                                   [0] * len(members))  # fmt: skip
    return max(ends) / 1000.0


def _collectives(nodes_by_rank: Sequence[Sequence[Any]], result: SimResult) -> list[_Collective]:
    """Each ring collective of the job (a group's n-th, as the ranks meet), with the ranks
    that took part and each one's transfer time in the replay."""
    found: dict[tuple[str, int], _Collective] = {}
    for rank, nodes in enumerate(nodes_by_rank):
        graph = result.graphs[rank]
        position = {node_id: i for i, node_id in enumerate(graph.ids)}
        counts: Counter[str] = Counter()
        for node in nodes:
            if node.type != NodeType.COMM_COLL_NODE:
                continue
            values = {a.name: attr_value(a) for a in node.attr}
            comm_type, size = values.get("comm_type"), values.get("comm_size")
            if comm_type is None or int(comm_type) not in RING_COLLECTIVES or not size:
                continue
            pg = str(values.get("pg_name") or "0")
            key = (pg, counts[pg])
            counts[pg] += 1
            i = position.get(node.id)
            if i is None:
                continue
            entry = found.setdefault(key, _Collective(int(comm_type), int(size), [], []))
            entry.members.append(rank)
            entry.transfers_us.append(result.end[rank][i] - result.start[rank][i])
    return [c for c in found.values() if len(c.members) >= 2]
