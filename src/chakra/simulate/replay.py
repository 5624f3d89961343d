"""The one simulation: :func:`simulate` runs graphs (one per rank) and returns a frozen
:class:`~chakra.simulate.sim_result.SimResult` with every per-rank summary the analyses,
views and reports read; :func:`what_if` runs copies of them with durations scaled and/or
collectives timed by a network model. Neither changes the graphs it is given.

    from chakra.simulate import load_graph, simulate, what_if

    graphs = [load_graph(path, rank) for rank, path in enumerate(paths)]
    result = simulate(graphs)
    faster = what_if(graphs, [ScaleRule.parse("gpu=0.5")])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import msgspec

from chakra.simulate.analysis import ScaleRule, critical_path, scaled_graphs
from chakra.simulate.astra_network import AstraRing
from chakra.simulate.network import NetworkModel
from chakra.simulate.result import rank_results
from chakra.simulate.sim_graph import SimGraph
from chakra.simulate.sim_result import SimResult
from chakra.simulate.times import run_graphs


class SimOptions(msgspec.Struct, frozen=True):
    """How :func:`simulate` runs and what it adds to its result.

    ``network``: time collectives with this model (None: their recorded time); ``ring``:
    ASTRA-sim's resource model and ring instead (graphs built for it,
    :func:`chakra.simulate.run.load_astra_graph`). ``explain``: fill each rank's
    model-only fields (one more run, as long as the first). ``critical_top``: how many
    names each critical path keeps."""

    network: Optional[NetworkModel] = None
    ring: Optional[AstraRing] = None
    explain: bool = True
    critical_top: int = 5


def simulate(graphs: Sequence[SimGraph], options: Optional[SimOptions] = None) -> SimResult:
    """Simulate ``graphs`` (one per rank, rank = ``graph.rank``) together, with each
    rank's :class:`~chakra.simulate.sim_result.RankResult` and critical path. Raises
    SimulationError for graphs that cannot run (cycles, deadlocks). ``options``: None for
    :class:`SimOptions`' defaults."""
    options = options or SimOptions()
    return summarised(run_graphs(graphs, options.network, options.ring, "replay"), options)


def summarised(result: SimResult, options: Optional[SimOptions] = None) -> SimResult:
    """``result`` (a bare run) with its per-rank summaries and critical paths filled."""
    options = options or SimOptions()
    paths = tuple(
        tuple(critical_path(result, r, options.critical_top)) for r in range(len(result.graphs))
    )
    ranks = tuple(rank_results(result, explain=options.explain))
    return msgspec.structs.replace(result, ranks=ranks, critical_paths=paths)


def what_if(
    graphs: Sequence[SimGraph],
    rules: Sequence[ScaleRule],
    network: Optional[NetworkModel] = None,
    ring: Optional[AstraRing] = None,
    label: str = "",
) -> SimResult:
    """A bare run (times, no summaries) of copies of ``graphs`` with every matching rule
    of ``rules`` applied to each node's duration (factors of rules matching one node
    multiply), collectives timed by ``network`` (None: their recorded time), or with
    ASTRA-sim's ``ring``; ``nodes_matched`` says how many nodes each rule matched. The
    graphs given are left as they are. Raises ChakraError naming the first rule that
    matches no node in any rank. ``label`` names the run in progress lines (default:
    ``what-if: `` and the rules)."""
    scaled, counts = scaled_graphs(graphs, rules)
    label = label or "what-if: " + ",".join(rule.text for rule in rules)
    result = run_graphs(scaled, network, ring, label)
    return msgspec.structs.replace(result, nodes_matched=tuple(counts))


def what_if_of(
    replay: SimResult, rules: Sequence[ScaleRule], network: Optional[NetworkModel] = None,
    label: str = "",
) -> SimResult:  # fmt: skip
    """:func:`what_if` of ``replay``'s graphs, under ``network`` when given, else under
    the model that timed ``replay`` (``label``: as for :func:`what_if`)."""
    if network is not None:
        return what_if(replay.graphs, rules, network, label=label)
    return what_if(replay.graphs, rules, replay.network, replay.ring, label)


class Replay(msgspec.Struct, frozen=True):
    """A replay with its summaries, and the what-if run of the same graphs when one was
    asked for (None otherwise)."""

    result: SimResult
    what_if: Optional[SimResult] = None

    def what_if_makespans(self) -> list[Optional[float]]:
        """Each rank's what-if makespan (µs), or None per rank without a what-if."""
        if self.what_if is None:
            return [None] * len(self.result.graphs)
        return list(self.what_if.makespans())


def replay(
    graphs: Sequence[SimGraph],
    rules: Sequence[ScaleRule] = (),
    network: Optional[NetworkModel] = None,
    options: Optional[SimOptions] = None,
) -> Replay:
    """:func:`simulate` ``graphs`` under ``options``, and, when there are ``rules`` or a
    what-if ``network``, :func:`what_if` of them (under ``network`` if given, else the
    replay's model). The what-if runs before the summaries, so that a rule that matches no
    node (ChakraError) costs one run, not three."""
    options = options or SimOptions()
    bare = run_graphs(graphs, options.network, options.ring, "replay")
    scaled = what_if_of(bare, rules, network) if rules or network is not None else None
    return Replay(summarised(bare, options), scaled)
