"""One thing wrong with a Chakra ET graph, as :mod:`chakra.et.graph_checks` reports it, and
how a report names a node."""

from __future__ import annotations

from typing import Optional

import msgspec


class Problem(msgspec.Struct, frozen=True, gc=False):
    """One thing wrong with a graph.

    ``kind`` is one of :data:`chakra.et.graph_checks.PROBLEM_KINDS`; ``node_id`` the node
    concerned (None if none); ``message`` one sentence naming the node and the fault.
    ``related_ids`` holds the other ids involved: the missing id of a dangling dep, or for a
    cycle its ids in order, each listing the next among its ``data_deps`` and the last
    listing the first.
    """

    kind: str
    node_id: Optional[int]
    message: str
    related_ids: tuple[int, ...] = ()


class PlacedProblem(msgspec.Struct, frozen=True, gc=False):
    """A problem of one node with where a report lists it: ``position``, the node's place
    in the stream (from 0); ``slot``, its place among that node's problems (a repeated id
    first, then the node's own fields, then its self deps)."""

    position: int
    slot: int
    problem: Problem


#: :attr:`PlacedProblem.slot` of each group of a node's problems, in report order.
SLOT_DUPLICATE, SLOT_NODE, SLOT_SELF_DATA, SLOT_SELF_CTRL = 0, 1, 2, 3


def node_label(node_id: int, name: Optional[str]) -> str:
    """How a message names a node: its id, and its name when known."""
    return f"node {node_id}" if name is None else f"node {node_id} ({name!r})"
