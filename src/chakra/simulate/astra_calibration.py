"""The ASTRA-sim ring with which the fold of a job (:mod:`chakra.simulate.fold`) finishes
each rank at its measured step: the link bandwidth, with run.py's per-hop latency (500 ns).

On the fold, a rank's finish in ASTRA-sim's model falls as the bandwidth grows (the
communications it waited for end sooner); the bandwidth is found by bisection (on its
logarithm) where the ranks' finishes over their measured steps average 1, using the same
resource model and ring as ``chakra_sim --resources astra-sim``
(:mod:`chakra.simulate.astra_events`, exact to ASTRA-sim's own finish). It turns a measured
step into an ASTRA-sim baseline: run ASTRA-sim with that bandwidth on the fold, then vary it.
When even an unbounded network leaves the fold slower than measured, or the slowest network
tried faster, the bound is taken and the fit says so (``matched`` False).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

import msgspec

from chakra.simulate.astra_graph import build_astra_graph
from chakra.simulate.astra_network import AstraRing
from chakra.simulate.replay import SimOptions
from chakra.simulate.run import simulate

#: run.py's per-hop latency (``--latency-ns``).
LATENCY_NS = 500.0
#: The bandwidths tried (GB/s), and the bisection's steps between them.
LOWEST_GBPS, HIGHEST_GBPS, STEPS = 1e-4, 1e5, 40


class FittedRing(msgspec.Struct, frozen=True):
    """The ring, each rank's finish with it over its measured step, and whether the
    average of those reached 1 (False: the bandwidth is at a bound of the search)."""

    ring: AstraRing
    ratios: tuple[float, ...]
    matched: bool


def fitted_ring(folded: Sequence[Sequence[Any]], measured_us: Sequence[float]) -> FittedRing:
    """The ring for the fold ``folded`` (one node list per rank, rank order) of ranks whose
    measured steps are ``measured_us``."""
    npus = max(len(folded), 1)
    graphs = [build_astra_graph(nodes, rank) for rank, nodes in enumerate(folded)]

    def ratios(gbps: float) -> list[float]:
        ring = AstraRing(gbps, LATENCY_NS, npus)
        spans = simulate(graphs, SimOptions(ring=ring)).makespans()
        return [span / measured if measured > 0 else 1.0
                for span, measured in zip(spans, measured_us)]  # fmt: skip

    low, high = math.log10(LOWEST_GBPS), math.log10(HIGHEST_GBPS)
    if statistics.mean(ratios(10**high)) > 1.0:  # the fold alone outlasts the step
        return FittedRing(AstraRing(10**high, LATENCY_NS, npus), tuple(ratios(10**high)), False)
    if statistics.mean(ratios(10**low)) < 1.0:  # no network is slow enough
        return FittedRing(AstraRing(10**low, LATENCY_NS, npus), tuple(ratios(10**low)), False)
    for _ in range(STEPS):
        middle = (low + high) / 2
        if statistics.mean(ratios(10**middle)) > 1.0:
            low = middle
        else:
            high = middle
    gbps = 10**high
    return FittedRing(AstraRing(gbps, LATENCY_NS, npus), tuple(ratios(gbps)), True)
