"""Collectives across ranks: who must meet, and how long a meeting lasts once all are there.

A communication node meets the nodes with the same :class:`CommKey` on the other ranks of its
group; the group's members are every rank with a communication in it (so a rank that skips
one of the group's communications is a deadlock, reported, not a silent pass).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Optional

from chakra.simulate.network import NetworkModel
from chakra.simulate.sim_graph import CommKey, Recorded, SimGraph


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


#: ``start_time_micros`` is written in whole microseconds.
START_RESOLUTION_US = 1.0


def member_ends(
    key: CommKey,
    members: int,
    begin: float,
    recorded: Mapping[int, Recorded],
    network: Optional[NetworkModel],
) -> dict[int, float]:
    """When each member (rank) of a meeting that begins at ``begin`` (its last arrival) ends.
    ``recorded``: rank -> what its node recorded (:meth:`SimGraph.recorded`).

    With a network model, every member ends after the model's time. Otherwise each member
    ends after its own recorded time less what it measurably spent waiting for the last
    member (the latest measured start minus its own): the simulation re-creates the wait,
    the rest (the transfer and the member's own tail: gloo ranks finish a collective at
    different times) is the member's, and only that rest is scaled by a what-if. Without a
    measured start for every member, all end after the shortest duration (that of the
    member that did not wait). When the members' recordings end together (one clock), both
    rules give the same ends.
    """
    if network is not None:
        length = network.duration_us(key.comm_type, key.size_bytes, members)
        return dict.fromkeys(recorded, begin + length)
    starts = [r.measured_start_us for r in recorded.values()]
    if min(starts) < 0:
        shortest = min(r.duration_us for r in recorded.values())
        return dict.fromkeys(recorded, begin + shortest)
    unscaled = {rank: r.duration_us / r.factor if r.factor else 0.0 for rank, r in recorded.items()}
    shortest = min(unscaled.values())
    last = max(starts)
    ends = {}
    for rank, r in recorded.items():
        tail = max(0.0, unscaled[rank] - (last - r.measured_start_us))
        # measured starts are whole microseconds: a tail that differs from the shortest
        # duration by less than that is the same transfer
        if abs(tail - shortest) <= START_RESOLUTION_US:
            tail = shortest
        ends[rank] = begin + tail * r.factor
    return ends
