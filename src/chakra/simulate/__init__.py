"""Multi-stream, multi-rank replay of Chakra ET graphs: each resource runs its nodes in a fixed
order, and start times are a longest path over the graph, computed in one pass
(:mod:`chakra.simulate.sweep`), with an event-driven simulation for the graphs that pass does
not take (cycles, deadlocks; :mod:`chakra.simulate.events`). ASTRA-sim's resource model (one
CPU, GPU and communication slot per rank, its analytical ring) is there to compare with it
(:mod:`chakra.simulate.astra_events`)."""

from chakra.simulate.engine import Engine
from chakra.simulate.model import SimGraph, SimulationError, build_graph
from chakra.simulate.result import RankResult, rank_results

__all__ = ["Engine", "RankResult", "SimGraph", "SimulationError", "build_graph", "rank_results"]
