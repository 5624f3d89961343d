"""The order in which the simulator takes a rank's nodes: a topological sort that always
takes the ready node with the earliest key (its measured start, else the largest key among
its predecessors), then the smallest id. Each resource runs its nodes in this order.

A node's key does not depend on the order the sort takes nodes in, so it is computed first,
with array operations; if sorting all nodes by (key, id) already puts every dependency first,
the priority sort takes exactly that order (the smallest remaining node is then always
ready). That is checked with array comparisons. Where a dependency sorts after its node
between equal keys (measured starts are whole microseconds), only the nodes of that key are
sorted by the heap; where keys go against a dependency, the heap sorts everything.
"""

from __future__ import annotations

import heapq
import weakref
from typing import Optional

import numpy as np

from chakra.simulate.sim_graph import NO_RESOURCE, SimGraph

#: Orders already taken, by the identity of the arrays they depend on: a what-if's or a
#: slack run's graphs share them with the replay's, and taking the order again was half of
#: each such run (benchmarks/views_cost.py). Entries go when their arrays do.
_TAKEN: dict[int, tuple[tuple[weakref.ref, ...], np.ndarray]] = {}


def take_order(graph: SimGraph) -> np.ndarray:
    """Node indices in the order the priority sort takes them (read-only); shorter than the
    graph when some nodes are on (or behind) a cycle. The order depends only on the ids,
    the dependencies and the measured starts, so graphs that share those arrays (copies
    made with other durations) share one order."""
    inputs = (graph.ids, graph.preds, graph.pred_start, graph.measured_start_us)
    key = id(graph.preds)
    taken = _TAKEN.get(key)
    if taken is not None and all(ref() is part for ref, part in zip(taken[0], inputs)):
        return taken[1]
    order = _sorted_order(graph)
    if order is None:
        order = _heap_order(graph)
    order.flags.writeable = False
    try:
        refs = tuple(weakref.ref(part) for part in inputs)
    except TypeError:  # arrays of a kind without weak references: not remembered
        return order
    _TAKEN[key] = (refs, order)
    weakref.finalize(graph.preds, _TAKEN.pop, key, None)
    return order


def resource_orders(graph: SimGraph, order: np.ndarray) -> list[list[int]]:
    """Per resource, its nodes in ``order``."""
    out: list[list[int]] = [[] for _ in graph.resources]
    resource = graph.resource
    for node in order.tolist():
        slot = resource[node]
        if slot != NO_RESOURCE:
            out[slot].append(node)
    return out


def _sorted_order(graph: SimGraph) -> Optional[np.ndarray]:
    count = len(graph.ids)
    measured = np.asarray(graph.measured_start_us, dtype=np.float64)
    ids = np.asarray(graph.ids, dtype=np.int64)
    preds = np.asarray(graph.preds, dtype=np.int64)
    pred_start = np.asarray(graph.pred_start, dtype=np.int64)
    targets = np.repeat(np.arange(count), np.diff(pred_start))
    unknown = measured < 0
    if unknown.all():  # every key is 0: by id
        keys = np.zeros(count)
        order = np.arange(count) if (ids[1:] > ids[:-1]).all() else np.argsort(ids)
    else:
        keys = _keys(measured, unknown, preds, targets)
        if keys is None:
            return None
        order = np.lexsort((ids, keys))
    position = np.empty(count, dtype=np.int64)
    position[order] = np.arange(count)
    backwards = position[preds] >= position[targets]
    if not backwards.any():
        return order
    # an edge against the sort between equal keys: that key's nodes are taken by the heap
    # among themselves (all smaller keys are taken before them, all larger after)
    sources, sinks = preds[backwards], targets[backwards]
    if (keys[sources] != keys[sinks]).any():
        return None
    sorted_keys = keys[order]
    for key in np.unique(keys[sinks]).tolist():
        low = int(np.searchsorted(sorted_keys, key, "left"))
        high = int(np.searchsorted(sorted_keys, key, "right"))
        group = _group_order(graph, order[low:high].tolist(), keys)
        if group is None:
            return None
        order[low:high] = group
    return order


def _group_order(graph: SimGraph, nodes: list[int], keys: np.ndarray) -> Optional[list[int]]:
    """``nodes`` (all those with one key) in the order the heap takes them: the ready one
    with the smallest id; None if they hold a cycle."""
    members = set(nodes)
    ids, preds, pred_start, succs, succ_start = (
        graph.ids, graph.preds, graph.pred_start, graph.succs, graph.succ_start)  # fmt: skip
    waiting = {
        node: sum(preds[k] in members for k in range(pred_start[node], pred_start[node + 1]))
        for node in nodes
    }
    heap = [(ids[node], node) for node in nodes if waiting[node] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, node = heapq.heappop(heap)
        order.append(node)
        for k in range(succ_start[node], succ_start[node + 1]):
            successor = succs[k]
            if successor in members:
                waiting[successor] -= 1
                if waiting[successor] == 0:
                    heapq.heappush(heap, (ids[successor], successor))
    return order if len(order) == len(nodes) else None


def _keys(measured: np.ndarray, unknown: np.ndarray, preds: np.ndarray,
          targets: np.ndarray) -> Optional[np.ndarray]:  # fmt: skip
    """Each node's key: its measured start, else the largest key among its predecessors (0
    for none). Unknown keys rise from 0 until they stop changing, which, in a graph without
    cycles, is when each equals its predecessors' largest; None after ``_ROUNDS`` rounds (a
    long chain of unknown starts, or a cycle: the heap decides)."""
    keys = np.where(unknown, 0.0, measured)
    into = unknown[targets]
    if not into.any():
        return keys
    sources, sinks = preds[into], targets[into]
    for _ in range(_ROUNDS):
        risen = keys[sinks].copy()
        np.maximum.at(keys, sinks, keys[sources])
        if (keys[sinks] == risen).all():
            return keys
    return None


_ROUNDS = 32


def _heap_order(graph: SimGraph) -> np.ndarray:
    count = len(graph.ids)
    starts = graph.pred_start
    waiting = [starts[i + 1] - starts[i] for i in range(count)]
    inherited = [0.0] * count
    measured, ids, succs, succ_start = (
        graph.measured_start_us, graph.ids, graph.succs, graph.succ_start)  # fmt: skip
    heap = [(max(measured[i], 0.0), ids[i], i) for i in range(count) if waiting[i] == 0]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        key, _, node = heapq.heappop(heap)
        order.append(node)
        for k in range(succ_start[node], succ_start[node + 1]):
            successor = succs[k]
            inherited[successor] = max(inherited[successor], key)
            waiting[successor] -= 1
            if waiting[successor] == 0:
                start = measured[successor]
                own = start if start >= 0 else inherited[successor]
                heapq.heappush(heap, (own, ids[successor], successor))
    return np.array(order, dtype=np.int64)
