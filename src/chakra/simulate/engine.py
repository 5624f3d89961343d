"""The simulation engine: resources that run one node at a time in a fixed order, and
collectives that start when every rank of their group is ready.

Each resource runs its nodes in one fixed order, as a CUDA stream runs work in issue order
and a thread runs ops in program order: by measured start when known, else by id
(:mod:`chakra.simulate.order`). A node starts when it is its resource's next, the resource is
free, and its dependencies are done. With a fixed order, start times only grow when edges are
added or durations lengthened. The times are a longest path, computed in one pass over the
nodes (:mod:`chakra.simulate.sweep`); graphs the pass does not take (cycles, deadlocks,
negative durations) go to the event-driven simulation (:mod:`chakra.simulate.events`), which
gives the same times and reports the errors. Deterministic.
"""

from __future__ import annotations

import gc
from array import array
from collections.abc import Sequence
from typing import Optional

import numpy as np

from chakra.progress import phase
from chakra.simulate.events import EventSimulation
from chakra.simulate.network import NetworkModel
from chakra.simulate.order import resource_orders, take_order
from chakra.simulate.sim_graph import SimGraph
from chakra.simulate.sweep import sweep


class Engine:
    """Simulate one or more ranks' graphs together. ``run`` fills ``start``/``end`` (µs,
    per rank, per node index). A collective occupies each member's stream from its arrival
    and ends on all of them at the latest arrival plus the shortest duration any member
    recorded (that of the member that did not wait: the transfer itself).

    Internal to :mod:`chakra.simulate`: the library runs it through
    :func:`chakra.simulate.times.run_graphs` and hands out the frozen
    :class:`~chakra.simulate.sim_result.SimResult`."""

    def __init__(self, graphs: Sequence[SimGraph], network: Optional[NetworkModel] = None) -> None:
        self.graphs = list(graphs)
        self.network = network
        self.start = [array("d", [-1.0]) * len(g.ids) for g in self.graphs]
        self.end = [array("d", [-1.0]) * len(g.ids) for g in self.graphs]

    def _rank_offsets(self) -> list[float]:
        """When every rank carries measured starts, ranks begin as far apart as they were
        measured (traces of one job share a clock, to the precision of its sync); else 0."""
        firsts = []
        for graph in self.graphs:
            measured = np.asarray(graph.measured_start_us, dtype=np.float64)
            known = measured[measured >= 0]
            firsts.append(float(known.min()) if len(known) else -1.0)
        if len(firsts) < 2 or min(firsts) < 0:
            return [0.0] * len(firsts)
        return [first - min(firsts) for first in firsts]

    def run(self, label: str = "") -> None:
        """Simulate; on big graphs a phase of its own, a line when it begins and one when it
        ends (:mod:`chakra.progress`; nothing inside the tuned passes), named by ``label``
        (``"replay"``, ``"what-if: GPU 2x faster"``) when given."""
        # the run allocates no reference cycles, but many small objects: the collector
        # would scan every big list again and again for nothing
        collecting = gc.isenabled()
        gc.disable()
        nodes = sum(len(graph.ids) for graph in self.graphs)
        ranks = f"{len(self.graphs)} rank" + ("s" if len(self.graphs) != 1 else "")
        try:
            what = f"simulating {ranks}" + (f", {label}" if label else "")
            with phase(what, nodes, detail=f"{nodes:,} nodes"):
                self._run()
        finally:
            if collecting:
                gc.enable()

    def _run(self) -> None:
        orders = [take_order(graph) for graph in self.graphs]
        offsets = self._rank_offsets()
        times = sweep(self.graphs, self.network, orders, offsets)
        if times is None:
            per_resource = [resource_orders(g, order) for g, order in zip(self.graphs, orders)]
            EventSimulation(
                self.graphs, self.network, per_resource, offsets, self.start, self.end
            ).run()
            return
        for r, (starts, ends) in enumerate(times):
            self.start[r] = array("d", starts.tobytes())
            self.end[r] = array("d", ends.tobytes())
