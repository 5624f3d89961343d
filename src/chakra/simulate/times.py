"""A bare run: the start and end times of graphs under one resource model, as a
:class:`~chakra.simulate.sim_result.SimResult` (no per-rank summaries). The engines stay
inside :mod:`chakra.simulate`; everything else receives the frozen result."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from chakra.simulate.astra_events import AstraEngine
from chakra.simulate.astra_network import AstraRing
from chakra.simulate.engine import Engine
from chakra.simulate.network import NetworkModel
from chakra.simulate.sim_graph import SimGraph
from chakra.simulate.sim_result import SimResult, frozen_times


def run_graphs(
    graphs: Sequence[SimGraph],
    network: Optional[NetworkModel] = None,
    ring: Optional[AstraRing] = None,
    label: str = "",
) -> SimResult:
    """Simulate ``graphs`` (one per rank) together: with ``ring``, ASTRA-sim's resource
    model (:mod:`chakra.simulate.astra_events`); else each thread and stream in its fixed
    order, collectives timed by ``network`` (None: their recorded time). Raises
    SimulationError for a graph that cannot run (a cycle, a deadlock). ``label`` names
    the run in progress lines (``"replay"``)."""
    engine = Engine(graphs, network) if ring is None else AstraEngine(graphs, ring)
    engine.run(label)
    return SimResult(
        tuple(engine.graphs), frozen_times(engine.start), frozen_times(engine.end), network, ring
    )


def rerun(result: SimResult, graphs: Sequence[SimGraph], label: str = "") -> SimResult:
    """A bare run of ``graphs`` under the model (network, ring) that timed ``result``,
    named ``label`` in progress lines."""
    return run_graphs(graphs, result.network, result.ring, label)
