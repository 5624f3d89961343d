"""Collectives across ranks: who must meet, and how long a meeting lasts once all are there.

A communication node meets the nodes with the same :class:`CommKey` on the other ranks of its
group; the group's members are every rank with a communication in it (so a rank that skips
one of the group's communications is a deadlock, reported, not a silent pass).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Optional

from chakra.simulate.model import CommKey, SimGraph
from chakra.simulate.network import NetworkModel


class Meeting:
    """Arrivals at one collective (or send/recv pair) across ranks: rank -> (time, node)."""

    __slots__ = ("arrivals", "members")

    def __init__(self, members: frozenset[int]) -> None:
        self.members = members
        self.arrivals: dict[int, tuple[float, int]] = {}


def meetings(graphs: Sequence[SimGraph]) -> dict[CommKey, Meeting]:
    """Every communication of every rank, with the members of its group."""
    groups: dict[str, set[int]] = defaultdict(set)
    for graph in graphs:
        for key in graph.comm.values():
            groups[key.pg_name].add(graph.rank)
    members = {pg: frozenset(ranks) for pg, ranks in groups.items()}
    return {key: Meeting(members[key.pg_name]) for graph in graphs for key in graph.comm.values()}


def length_us(key: CommKey, members: int, durations: Iterable[float],
              network: Optional[NetworkModel]) -> float:  # fmt: skip
    """The network model's time, else the shortest duration any member recorded (that of
    the member that did not wait: the transfer itself)."""
    if network is not None:
        return network.duration_us(key.comm_type, key.size_bytes, members)
    return min(durations)
