"""Communication nodes that nothing times: no recorded duration and no measured start.

Workloads written by generators (chakra_generator, the Text converter, ASTRA-sim's scripts)
give collectives a size but no time; the replay of recorded times takes them as free, so the
simulated makespan is only the compute, often 0 us. A network model times them.
"""

from __future__ import annotations

from collections.abc import Iterable

from chakra.simulate.sim_graph import SimGraph


def untimed_communication(graphs: Iterable[SimGraph]) -> int:
    """How many communication nodes of ``graphs`` have duration 0 and no measured start."""
    return sum(
        1
        for graph in graphs
        for node in graph.comm
        if graph.duration_us[node] == 0 and graph.measured_start_us[node] < 0
    )
