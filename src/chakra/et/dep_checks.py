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
from collections.abc import Callable, Sequence
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
#: rounds that peel off edges that cannot be on a cycle before the search
_PEEL_ROUNDS = 16


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
    (by node, in stream order); ``tail``, the dangling deps then the cycles."""

    placed: list[PlacedProblem]
    tail: list[Problem]


class _Vertices:
    """Distinct ids numbered by first appearance: each position's vertex, each vertex's
    first position, and the lookup of ids (-1: no node has it)."""

    def __init__(self, ids: np.ndarray) -> None:
        count = len(ids)
        #: ids first, first + 1, ... in order (each its own position less ``first``): None
        #: when they are not
        self.first: Optional[np.uint64] = None
        if count == 0 or (ids[1:] > ids[:-1]).all():  # the common case: written in id order
            self.of_position = self.first_position = np.arange(count, dtype=np.int64)
            self.sorted_ids, self.sorted_vertex = ids, self.of_position
            self.repeats = self.repeat_first = np.zeros(0, dtype=np.int64)
            if count and ids[-1] - ids[0] == count - 1:
                self.first = ids[0]
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
        if self.first is not None:
            offset = values - self.first  # wraps around below the first id: too large
            found = offset.astype(np.int64)
            found[offset >= np.uint64(len(self.sorted_ids))] = -1
            return found
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
    owner = np.repeat(np.arange(len(ids), dtype=np.int64), np.diff(deps.data_start))
    first = vertices.first
    if first is not None and not len(deps.ctrl):  # ids in a row, and only data deps
        offsets = deps.data - first if first else deps.data
        if (offsets < owner.view(np.uint64)).all():  # each on an earlier node: all well
            return DepFindings([], [])
    dep, is_ctrl = deps.data, np.zeros(len(deps.data), dtype=bool)
    if len(deps.ctrl):  # the data deps, then the ctrl deps (sorted by node where it matters)
        owner = np.concatenate((owner, deps.ctrl_owner))
        dep = np.concatenate((dep, deps.ctrl))
        is_ctrl = np.concatenate((is_ctrl, np.ones(len(deps.ctrl), dtype=bool)))
    parent = vertices.lookup(dep)
    own = dep == ids[owner]
    missing = parent < 0
    placed = _repeats(ids, names, vertices)
    if own.any():
        placed += _self_deps(ids, names, owner, own, is_ctrl)
    tail = []
    dangling = np.flatnonzero(missing if check_ctrl_deps else missing & ~is_ctrl)
    if len(dangling):  # in stream order: node by node, its data deps then its ctrl deps
        dangling = dangling[np.lexsort((dangling, is_ctrl[dangling], owner[dangling]))]
        listed = zip(owner[dangling].tolist(), dep[dangling].tolist(), is_ctrl[dangling].tolist())
        tail = [_dangling(int(ids[p]), names[p], d, c) for p, d, c in listed]
    edge = ~(missing | own)
    children = vertices.of_position[owner]
    if not (parent[edge] < children[edge]).all():
        tail.extend(_cycle_problems(deps, vertices, owner, is_ctrl, parent, children, edge))
    return DepFindings(placed, tail)


def _cycle_problems(deps: DepArrays, vertices: _Vertices, owner: np.ndarray, is_ctrl: np.ndarray,
                    parent: np.ndarray, children: np.ndarray,
                    edge: np.ndarray) -> list[Problem]:  # fmt: skip
    """The cycles of the graph whose deps name vertices ``parent`` (-1: missing) from nodes
    ``owner`` (vertices ``children``), the ones where ``edge`` being its edges."""
    at = np.flatnonzero(edge)

    def deferred(where: np.ndarray) -> np.ndarray:
        """Whether each dep of ``where`` waited until the end of the stream: its id first
        appears after its node (or nowhere)."""
        named = parent[where]
        return (named < 0) | (vertices.first_position[np.maximum(named, 0)] > owner[where])

    def canonical(chosen: np.ndarray) -> np.ndarray:
        """``chosen`` (edges) in order: those known when their node was read, in stream
        order (node by node, its data deps then its ctrl deps), then the others so."""
        where = at[chosen]
        return chosen[np.lexsort((where, is_ctrl[where], owner[where], deferred(where)))]

    keys = deps.starts[vertices.first_position]
    cycles = _find_cycles(len(vertices.first_position), parent[at], children[at], keys, canonical)
    if not cycles:
        return []
    everything = np.arange(len(parent))
    noteworthy = np.union1d(vertices.repeats, owner[deferred(everything)])
    named = _vertex_names(noteworthy, vertices.of_position, deps.names)
    return [_cycle_problem(c, named, vertices.first_position, deps.ids) for c in cycles]


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


def _find_cycles(count: int, parents: np.ndarray, children: np.ndarray, keys: np.ndarray,
                 canonical: Callable[[np.ndarray], np.ndarray]) -> list[Cycle]:  # fmt: skip
    """:func:`find_cycles` of the graph (its edges in the order ``canonical`` puts any of
    them in), searched only where the orders of the module doc leave room for a cycle, and
    only among edges that can be on one."""
    if (parents < children).all():
        return []
    raised = _raised(keys, parents, children)
    if raised is None:
        chosen = np.arange(len(parents))
    else:  # no edge runs from a larger key to a smaller one now: only ties can run backwards
        parent_keys, child_keys = raised[parents], raised[children]
        tied = parent_keys == child_keys
        against = tied & (parents > children)
        if not against.any():
            return []
        # every cycle lies within one key (keys cannot fall along an edge): only the keys
        # with an edge against the vertex order can hold one
        chosen = np.flatnonzero(tied)
        chosen = chosen[_among(parent_keys[chosen], np.unique(parent_keys[against]))]
    chosen = canonical(chosen)
    sub_parents, sub_children = parents[chosen], children[chosen]
    kept = _on_cycles(sub_parents, sub_children)
    sub_parents, sub_children = sub_parents[kept], sub_children[kept]
    if not len(sub_parents):
        return []
    members = np.unique(np.concatenate((sub_parents, sub_children)))
    found = find_cycles(
        len(members),
        _as_array(np.searchsorted(members, sub_parents)),
        _as_array(np.searchsorted(members, sub_children)),
    )
    return [Cycle(tuple(members[list(c.vertices)].tolist()), c.region) for c in found]


def _among(values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Whether each of ``values`` is one of ``wanted`` (sorted, not empty)."""
    at = np.minimum(np.searchsorted(wanted, values), len(wanted) - 1)
    return wanted[at] == values


def _on_cycles(parents: np.ndarray, children: np.ndarray) -> np.ndarray:
    """A mask of the edges left once those that cannot be on a cycle are peeled off, a few
    rounds: an edge whose parent has no edge in or whose child has no edge out. Every edge
    of a strongly connected region stays."""
    members, numbered = np.unique(np.concatenate((parents, children)), return_inverse=True)
    sources, sinks = numbered[: len(parents)], numbered[len(parents) :]
    alive = np.ones(len(parents), dtype=bool)
    for _ in range(_PEEL_ROUNDS):
        has_in = np.bincount(sinks[alive], minlength=len(members)) > 0
        has_out = np.bincount(sources[alive], minlength=len(members)) > 0
        now = alive & has_in[sources] & has_out[sinks]
        if (now == alive).all():
            break
        alive = now
    return alive


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
