"""The graph-wide checks of a Chakra ET graph, over flat arrays of its nodes: repeated ids,
deps on ids that no node has, self deps and dependency cycles (over ``data_deps`` and
``ctrl_deps`` together, as ASTRA-sim waits on both).

``chakra_validate`` (:class:`chakra.et.graph_checks.GraphChecker`) and ``chakra_sim``'s
reader (:mod:`chakra.simulate.node_reader`) both fill a :class:`DepArrays` while they stream
the nodes and call :func:`dependency_problems`: one set of rules and messages for both.

Vertices are distinct ids numbered in order of first appearance (a repeated id adds its deps
to the same vertex); an edge runs from a dep to its dependent. Every step is an array
operation except the cycle search (:func:`chakra.et.cycles.find_cycles`, linear), which runs
only where an order proves nothing: when every edge runs forward in the vertices' order, or
in the order of their measured starts (ties by vertex) except between nodes that started
in the same microsecond, no cycle can exist outside those ties. A cycle is reported once per
strongly connected region, rotated to start at a vertex whose name the report can give
(the name of its first node that is repeated or lists an id not seen yet), as the streaming
validator this replaced did.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Optional

import msgspec
import numpy as np

from chakra.et.cycles import Cycle, find_cycles
from chakra.et.problems import (
    SLOT_DUPLICATE,
    SLOT_SELF_CTRL,
    SLOT_SELF_DATA,
    PlacedProblem,
    Problem,
    node_label,
)

_CYCLE_IDS_SHOWN = 10
#: rounds that raise unknown start keys to their parents' (beyond them: the full search)
_KEY_ROUNDS = 8


class DepArrays(msgspec.Struct, frozen=True):
    """One node stream's ids and deps, position by position: ``ids`` (uint64), ``names``;
    ``data`` (uint64) every node's ``data_deps`` one after the other, node ``i``'s being
    ``data[data_start[i]:data_start[i + 1]]``; ``ctrl`` (uint64) every ``ctrl_deps`` entry
    with ``ctrl_owner`` (int64, nondecreasing) the position of the node listing it;
    ``starts`` (float64) each node's measured start in µs, negative when unknown (a hint
    for the cycle search, which never changes what it finds)."""

    ids: np.ndarray
    names: Sequence[str]
    data: np.ndarray
    data_start: np.ndarray
    ctrl: np.ndarray
    ctrl_owner: np.ndarray
    starts: np.ndarray


class DepFindings(msgspec.Struct, frozen=True):
    """What :func:`dependency_problems` found: ``placed``, the repeated ids and self deps
    (by node, in stream order); ``tail``, the dangling deps then the cycles; ``bad_data``,
    a mask over ``DepArrays.data`` of the deps that are self deps or name no node (what a
    reader that goes on regardless leaves out)."""

    placed: list[PlacedProblem]
    tail: list[Problem]
    bad_data: np.ndarray


class _Vertices:
    """Distinct ids numbered by first appearance: each position's vertex, each vertex's
    first position, and the lookup of ids (-1: no node has it)."""

    def __init__(self, ids: np.ndarray) -> None:
        count = len(ids)
        if count == 0 or (ids[1:] > ids[:-1]).all():  # the common case: written in id order
            self.of_position = self.first_position = np.arange(count, dtype=np.int64)
            self.sorted_ids, self.sorted_vertex = ids, self.of_position
            self.repeats = self.repeat_first = np.zeros(0, dtype=np.int64)
            return
        order = np.argsort(ids, kind="stable")  # equal ids keep their stream order
        ordered = ids[order]
        new = np.ones(count, dtype=bool)
        new[1:] = ordered[1:] != ordered[:-1]
        group = np.cumsum(new) - 1
        group_first = order[new]
        rank = np.empty(len(group_first), dtype=np.int64)
        rank[np.argsort(group_first, kind="stable")] = np.arange(len(group_first))
        self.of_position = np.empty(count, dtype=np.int64)
        self.of_position[order] = rank[group]
        self.first_position = np.sort(group_first)
        self.sorted_ids, self.sorted_vertex = ordered[new], rank
        repeats = order[~new]
        by_position = np.argsort(repeats, kind="stable")
        self.repeats = repeats[by_position]
        self.repeat_first = group_first[group[~new]][by_position]

    def lookup(self, values: np.ndarray) -> np.ndarray:
        """The vertex of each id of ``values``, -1 for an id no node has."""
        if not len(self.sorted_ids) or not len(values):
            return np.full(len(values), -1, dtype=np.int64)
        at = np.searchsorted(self.sorted_ids, values)
        np.minimum(at, len(self.sorted_ids) - 1, out=at)
        found = self.sorted_ids[at] == values
        return np.where(found, self.sorted_vertex[at], -1)


def dependency_problems(deps: DepArrays, check_ctrl_deps: bool = True) -> DepFindings:
    """Every repeated id, self dep, dangling dep (``ctrl_deps`` ones only with
    ``check_ctrl_deps``) and cycle of ``deps``. O(nodes + deps) array operations, plus the
    cycle search where no order rules cycles out (see the module doc)."""
    ids, names = deps.ids, deps.names
    vertices = _Vertices(ids)
    data_owner = np.repeat(np.arange(len(ids), dtype=np.int64), np.diff(deps.data_start))
    owner = np.concatenate((data_owner, deps.ctrl_owner))
    dep = np.concatenate((deps.data, deps.ctrl))
    is_ctrl = np.zeros(len(dep), dtype=bool)
    is_ctrl[len(deps.data) :] = True
    if len(deps.ctrl):  # stream order: node by node, its data deps then its ctrl deps
        order = np.lexsort((np.arange(len(dep)), is_ctrl, owner))
        owner, dep, is_ctrl = owner[order], dep[order], is_ctrl[order]
    parent = vertices.lookup(dep)
    own = dep == ids[owner]
    missing = parent < 0
    placed = _repeats(ids, names, vertices) + _self_deps(ids, names, owner, own, is_ctrl)
    dangling = missing if check_ctrl_deps else missing & ~is_ctrl
    listed = zip(owner[dangling].tolist(), dep[dangling].tolist(), is_ctrl[dangling].tolist())
    tail = [_dangling(int(ids[p]), names[p], d, c) for p, d, c in listed]
    # an edge waits until the end of the stream when its dep's id first appears later on
    deferred = missing | (vertices.first_position[np.maximum(parent, 0)] > owner)
    edge = ~missing & ~own
    edge_order = np.flatnonzero(edge)[np.argsort(deferred[edge], kind="stable")]
    parents, children = parent[edge_order], vertices.of_position[owner[edge_order]]
    keys = deps.starts[vertices.first_position] if len(ids) else deps.starts
    cycles = _find_cycles(len(vertices.first_position), parents, children, keys)
    if cycles:
        noteworthy = np.union1d(vertices.repeats, owner[deferred])
        named = _vertex_names(noteworthy, vertices.of_position, names)
        tail.extend(_cycle_problem(c, named, vertices.first_position, ids) for c in cycles)
    bad = (missing | own)[: len(deps.data)] if not len(deps.ctrl) else _data_mask(
        missing | own, is_ctrl, order, len(deps.data))  # fmt: skip
    return DepFindings(placed, tail, bad)


def _data_mask(bad: np.ndarray, is_ctrl: np.ndarray, order: np.ndarray, count: int) -> np.ndarray:
    """``bad`` (in stream order) back over the data deps in their own order."""
    out = np.zeros(count, dtype=bool)
    data = ~is_ctrl
    out[order[data]] = bad[data]
    return out


def _repeats(ids: np.ndarray, names: Sequence[str], vertices: _Vertices) -> list[PlacedProblem]:
    out = []
    for position, first in zip(vertices.repeats.tolist(), vertices.repeat_first.tolist()):
        message = (
            f"{node_label(int(ids[position]), names[position])}, node #{position + 1} of the"
            f" stream, reuses the id of node #{first + 1}"
        )
        problem = Problem("duplicate_id", int(ids[position]), message)
        out.append(PlacedProblem(position, SLOT_DUPLICATE, problem))
    return out


def _self_deps(ids: np.ndarray, names: Sequence[str], owner: np.ndarray, own: np.ndarray,
               is_ctrl: np.ndarray) -> list[PlacedProblem]:  # fmt: skip
    """One problem per node and field that lists the node's own id (however often)."""
    out = []
    for field, slot, where in (("data_deps", SLOT_SELF_DATA, own & ~is_ctrl),
                               ("ctrl_deps", SLOT_SELF_CTRL, own & is_ctrl)):  # fmt: skip
        for position in np.unique(owner[where]).tolist():
            node_id = int(ids[position])
            message = f"{node_label(node_id, names[position])} lists itself among its {field}"
            out.append(PlacedProblem(position, slot, Problem("self_dep", node_id, message)))
    return out


def _dangling(node_id: int, name: str, dep: int, ctrl: bool) -> Problem:
    kind, which = ("dangling_ctrl_dep", "ctrl dep") if ctrl else ("dangling_data_dep", "data dep")
    message = f"{node_label(node_id, name)} has {which} {dep}, which no node has"
    return Problem(kind, node_id, message, (dep,))


def _find_cycles(count: int, parents: np.ndarray, children: np.ndarray,
                 keys: np.ndarray) -> list[Cycle]:  # fmt: skip
    """:func:`find_cycles` of the graph, searched only where the orders of the module doc
    leave room for a cycle."""
    if not len(parents) or (parents < children).all():
        return []
    keys = _raised(keys, parents, children)
    if keys is None:
        return find_cycles(count, _as_array(parents), _as_array(children))
    # no edge runs from a larger key to a smaller one now: only ties can run backwards
    parent_keys, child_keys = keys[parents], keys[children]
    tied = parent_keys == child_keys
    against = tied & (parents > children)
    if not against.any():
        return []
    # every cycle lies within one key (keys cannot fall along an edge): only the keys with
    # an edge against the vertex order can hold one
    inside = tied & np.isin(parent_keys, np.unique(parent_keys[against]))
    sub_parents, sub_children = parents[inside], children[inside]
    members = np.unique(np.concatenate((sub_parents, sub_children)))
    found = find_cycles(
        len(members),
        _as_array(np.searchsorted(members, sub_parents)),
        _as_array(np.searchsorted(members, sub_children)),
    )
    return [Cycle(tuple(members[list(c.vertices)].tolist()), c.region) for c in found]


def _raised(keys: np.ndarray, parents: np.ndarray, children: np.ndarray) -> Optional[np.ndarray]:
    """``keys`` with unknown ones (negative) raised to the largest key among their parents,
    round by round, so that no edge runs from a larger key to a smaller one; None when some
    edge still does (measured starts that contradict the edges, or a long chain of unknown
    starts), which leaves the cycle search to the full graph."""
    keys = keys.copy()
    for _ in range(_KEY_ROUNDS):
        falling = keys[parents] > keys[children]
        if not falling.any():
            return keys
        if (keys[children[falling]] >= 0).any():
            return None
        np.maximum.at(keys, children[falling], keys[parents[falling]])
    return None


def _as_array(values: np.ndarray) -> array:
    out = array("q")
    out.frombytes(np.ascontiguousarray(values, dtype=np.int64).tobytes())
    return out


def _vertex_names(noteworthy: np.ndarray, of_position: np.ndarray,
                  names: Sequence[str]) -> dict[int, str]:  # fmt: skip
    """Each vertex's name: that of its first noteworthy node (repeated, or listing an id
    not seen yet), for the vertices that have one."""
    named: dict[int, str] = {}
    for position in noteworthy.tolist():
        named.setdefault(int(of_position[position]), names[position])
    return named


def _cycle_problem(cycle: Cycle, named: dict[int, str], first_position: np.ndarray,
                   ids: np.ndarray) -> Problem:  # fmt: skip
    """A ``cycle`` problem, rotated to start at a vertex whose name is known."""
    vertices = list(cycle.vertices)
    at = next((i for i, vertex in enumerate(vertices) if vertex in named), 0)
    vertices = vertices[at:] + vertices[:at]
    cycle_ids = tuple(int(ids[first_position[vertex]]) for vertex in vertices)
    shown = " -> ".join(str(i) for i in cycle_ids[:_CYCLE_IDS_SHOWN])
    more = f" -> ... ({len(cycle_ids)} ids in all)" if len(cycle_ids) > _CYCLE_IDS_SHOWN else ""
    message = (
        f"{node_label(cycle_ids[0], named.get(vertices[0]))} is on a dependency cycle"
        f" {shown}{more} -> {cycle_ids[0]} (each lists the next among its data_deps or"
        f" ctrl_deps, both of which ASTRA-sim waits on), in a strongly connected region"
        f" of {cycle.region} nodes"
    )
    return Problem("cycle", cycle_ids[0], message, cycle_ids)
