"""What-if runs: the replay again on copies of the graphs with some durations scaled
(:class:`~chakra.simulate.analysis.ScaleRule`) and/or collectives timed by a network model,
and how each rank's makespan changes.

A :class:`Scenario` names a set of rules (``"GPU 2x faster=gpu=0.5"``); :func:`run_what_if`
runs one set of rules and :func:`run_scenarios` several, with the policy the pipeline needs:
its default scenarios adapt to the job (one whose first rule matches no node, e.g. ``gpu`` on
a CPU-only trace, is skipped; its other rules that match none are left out; each with a
note), while a scenario the user asked for runs as given or is skipped whole, with a note.
Each scenario costs one more simulation of every rank.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Optional

import msgspec

from chakra.errors import ChakraError
from chakra.simulate.analysis import ScaleRule
from chakra.simulate.default_scenarios import DEFAULT_SCENARIO_TEXTS
from chakra.simulate.network import NetworkModel
from chakra.simulate.replay import what_if_of
from chakra.simulate.selection import with_instance_facts
from chakra.simulate.sim_graph import SimGraph
from chakra.simulate.sim_result import SimResult

logger = logging.getLogger(__name__)


class Scenario(msgspec.Struct, frozen=True):
    """A named what-if: ``rules`` applied together (factors of rules matching one node
    multiply), and optionally a network model timing the collectives; ``description``
    says what it means in words."""

    name: str
    rules: tuple[ScaleRule, ...]
    network: Optional[NetworkModel] = None
    description: str = ""

    @classmethod
    def parse(cls, text: str) -> Scenario:
        """``NAME=RULE[,RULE...]``, each RULE ``TARGET[@QUALIFIER...]=FACTOR`` as
        ``chakra_sim --scale`` takes it (so a NAME holds no ``=`` and a rule's target no
        ``,`` outside brackets: ``@shape:[[8,16],[16,48]]`` keeps its commas). Raises
        ChakraError naming ``text`` when it does not parse."""
        name, sep, rest = text.partition("=")
        name = name.strip()
        if not sep or not name or not rest.strip():
            raise ChakraError(
                f"--what-if {text!r}: expected NAME=RULE[,RULE...], e.g. 'GPU 2x faster=gpu=0.5'"
            )
        rules = []
        for part in (p.strip() for p in split_rules(rest)):
            try:
                rules.append(ScaleRule.parse(part))
            except ChakraError as exc:
                reason = str(exc).removeprefix(f"--scale {part}: ")
                message = f"rule {part!r} of scenario {name!r}: {reason}"
                raise ChakraError(
                    f"--what-if {text!r}: {message} (a scenario is NAME=RULE[,RULE...])"
                ) from exc
        return cls(name, tuple(rules))


def split_rules(text: str) -> list[str]:
    """``text`` cut at each comma outside square brackets (a shape's commas stay)."""
    parts, depth, start = [], 0, 0
    for at, char in enumerate(text):
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(depth - 1, 0)
        elif char == "," and depth == 0:
            parts.append(text[start:at])
            start = at + 1
    parts.append(text[start:])
    return parts


def _default(name: str, rules: str, description: str) -> Scenario:
    return Scenario(
        name, tuple(ScaleRule.parse(r) for r in rules.split(",")), description=description
    )


#: The defaults (:mod:`chakra.simulate.default_scenarios`), parsed.
DEFAULT_SCENARIOS = tuple(
    _default(text.name, text.rules, text.description) for text in DEFAULT_SCENARIO_TEXTS
)


class RankWhatIf(msgspec.Struct, frozen=True):
    """One rank under a what-if: its makespan (µs), the replay's, and the change in percent
    of the replay's (negative: faster; None when the replay's makespan is 0)."""

    rank: int
    makespan_us: float
    replay_makespan_us: float
    change_pct: Optional[float]


class WhatIf(msgspec.Struct, frozen=True):
    """The outcome of one scenario. ``rules``: the rule texts applied, ``nodes_matched``
    how many nodes (all ranks) each matched; ``network``: the network model's text, if any.
    ``ranks`` is empty when the scenario was skipped; ``note`` says why, or which rules
    were dropped."""

    name: str
    rules: list[str]
    nodes_matched: list[int]
    ranks: list[RankWhatIf]
    network: Optional[str] = None
    note: Optional[str] = None
    description: str = ""


def nodes_matched(graphs: Sequence[SimGraph], rules: Sequence[ScaleRule]) -> list[int]:
    """How many nodes of ``graphs`` (all ranks) each rule matches. One pass per rule."""
    return [sum(int(rule.mask(graph).sum()) for graph in graphs) for rule in rules]


def run_what_if(
    replay: SimResult,
    rules: Sequence[ScaleRule],
    network: Optional[NetworkModel] = None,
    name: str = "what-if",
) -> WhatIf:
    """Simulate copies of ``replay``'s graphs with ``rules`` applied and, when given,
    collectives timed by ``network`` (else ``replay``'s own model), and compare each
    rank's makespan with the replay's. Raises ChakraError naming the first rule that
    matches no node in any rank."""
    scaled = what_if_of(replay, rules, network, f"what-if: {name}")
    return compare(replay, scaled, [rule.text for rule in rules], network, name)


def compare(
    replay: SimResult,
    scaled: SimResult,
    rules: list[str],
    network: Optional[NetworkModel] = None,
    name: str = "what-if",
) -> WhatIf:
    """The :class:`WhatIf` of ``scaled`` (a what-if run of ``rules``, texts, under
    ``network`` if given) against ``replay``."""
    ranks = []
    for graph, before, makespan in zip(replay.graphs, replay.makespans(), scaled.makespans()):
        change = 100.0 * (makespan - before) / before if before > 0 else None
        ranks.append(RankWhatIf(graph.rank, makespan, before, change))
    text = None
    if network is not None:
        text = f"{network.topology}:{network.bandwidth_gbps:g}:{network.latency_us:g}"
    return WhatIf(name, rules, list(scaled.nodes_matched), ranks, text)


def _no_match(rules: list[str], joint: str) -> str:
    return f"{', '.join(rules)}{joint}{'matches' if len(rules) == 1 else 'match'} no node"


def run_scenarios(
    replay: SimResult, scenarios: Sequence[Scenario], adapt: bool = False
) -> list[WhatIf]:
    """:func:`run_what_if` of every scenario, in order. A scenario with a rule that
    matches no node is skipped; but when ``adapt`` (the defaults), only when that is its
    first rule: its other rules that match none are left out and it runs with the rest.
    Either way the :class:`WhatIf` says so in its ``note``, and a skipped scenario that
    was not adapted is logged as a warning."""
    wheres = [rule.where for scenario in scenarios for rule in scenario.rules]
    if any(wheres):  # input shapes read once for every scenario, not once per rule
        graphs = tuple(with_instance_facts(graph, wheres) for graph in replay.graphs)
        replay = msgspec.structs.replace(replay, graphs=graphs)
    out = []
    for scenario in scenarios:
        counts = nodes_matched(replay.graphs, scenario.rules)
        unmatched = [rule.text for rule, count in zip(scenario.rules, counts) if not count]
        kept = [rule for rule, count in zip(scenario.rules, counts) if count]
        if unmatched and (not adapt or (counts and not counts[0])):
            note = f"skipped: {_no_match(unmatched, ' ')}"
            if not adapt:
                logger.warning("what-if %r %s", scenario.name, note)
            out.append(
                WhatIf(
                    scenario.name,
                    [rule.text for rule in scenario.rules],
                    counts,
                    [],
                    note=note,
                    description=scenario.description,
                )
            )
            continue
        result = run_what_if(replay, kept, scenario.network, scenario.name)
        note = f"left out {_no_match(unmatched, ', which ')}" if unmatched else None
        out.append(msgspec.structs.replace(result, note=note, description=scenario.description))
    logger.info(
        "what-if: %d scenarios, %d run (one simulation each)",
        len(out),
        sum(1 for w in out if w.ranks),
    )
    return out
