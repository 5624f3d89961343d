"""Multi-stream, multi-rank replay of Chakra ET graphs: each resource runs its nodes in a fixed
order, and start times are a longest path over the graph, computed in one pass
(:mod:`chakra.simulate.sweep`), with an event-driven simulation for the graphs that pass does
not take (cycles, deadlocks; :mod:`chakra.simulate.events`). ASTRA-sim's resource model (one
CPU, GPU and communication slot per rank, its analytical ring) is there to compare with it
(:mod:`chakra.simulate.astra_events`).

The library: :func:`simulate` and :func:`what_if` (:mod:`chakra.simulate.replay`) take
:class:`SimGraph` s (:func:`load_graph` reads one from a file) and return a frozen
:class:`SimResult`, which the analyses and views read. A graph's nodes hold
:class:`Resource` s (a host thread or GPU stream, each running its nodes one at a time in
one fixed order that the graph gives; or one of ASTRA-sim's slots, which takes the ready
node with the smallest id). The engine that fills the times
(:mod:`chakra.simulate.engine`) is internal: only the tests of the engine itself and the
throughput benchmark drive it directly."""

from typing import TYPE_CHECKING

from chakra import lazy_exports

if TYPE_CHECKING:  # imported on first use (a command's --help loads none of them)
    from chakra.simulate.analysis import ScaleRule
    from chakra.simulate.graph_build import build_graph
    from chakra.simulate.load_checks import LoadOptions
    from chakra.simulate.network import NetworkModel
    from chakra.simulate.replay import SimOptions, simulate, what_if
    from chakra.simulate.resources import Resource
    from chakra.simulate.result import rank_results
    from chakra.simulate.run import load_graph, simulate_files
    from chakra.simulate.sim_graph import SimGraph, SimulationError
    from chakra.simulate.sim_result import PathEntry, RankResult, ResourceUse, SimResult

#: Each public name's module, imported on first use (:func:`chakra.lazy_exports`).
_MODULE_OF = {
    "ScaleRule": "analysis",
    "build_graph": "graph_build",
    "LoadOptions": "load_checks",
    "NetworkModel": "network",
    "SimOptions": "replay",
    "simulate": "replay",
    "what_if": "replay",
    "Resource": "resources",
    "rank_results": "result",
    "load_graph": "run",
    "simulate_files": "run",
    "SimGraph": "sim_graph",
    "SimulationError": "sim_graph",
    "PathEntry": "sim_result",
    "RankResult": "sim_result",
    "ResourceUse": "sim_result",
    "SimResult": "sim_result",
}
__getattr__ = lazy_exports(__name__, _MODULE_OF)

__all__ = [
    "LoadOptions", "NetworkModel", "PathEntry", "RankResult", "Resource", "ResourceUse",
    "ScaleRule", "SimGraph", "SimOptions", "SimResult", "SimulationError", "build_graph",
    "load_graph", "rank_results", "simulate", "simulate_files", "what_if",
]  # fmt: skip
