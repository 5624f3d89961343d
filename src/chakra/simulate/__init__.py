"""Event-driven multi-stream, multi-rank replay of Chakra ET graphs."""

from chakra.simulate.engine import Engine
from chakra.simulate.model import SimGraph, SimulationError, build_graph
from chakra.simulate.result import RankResult, rank_results

__all__ = ["Engine", "RankResult", "SimGraph", "SimulationError", "build_graph", "rank_results"]
