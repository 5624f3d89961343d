"""Dependency rows of a graph built with array operations: node ids to positions, and the
predecessor rows transposed into successor rows (both as compressed rows: ``start[i]:
start[i+1]`` slices the flat array).

The inputs are the arrays :func:`chakra.simulate.sim_graph.build_graph` fills while it reads the
nodes: ``ids`` (``array('q')``, one per node, never negative), ``deps`` (``array('Q')``, every
node's ``data_deps`` one after the other, as the protobuf's uint64) and ``dep_start``
(``array('q')``: node ``i``'s dependencies are ``deps[dep_start[i]:dep_start[i+1]]``).
Outputs are ``array('q')``, the type :class:`~chakra.simulate.sim_graph.SimGraph` declares.
"""

from __future__ import annotations

from array import array
from typing import NamedTuple, Optional

import numpy as np


class IdIndex(NamedTuple):
    """The ids sorted, and the position of each sorted id (None: the ids were already in
    increasing order, so a sorted id's position is its own index). ``identity``: the ids are
    0, 1, ... count-1 in order, each its own position (``sorted_ids`` is then left empty)."""

    sorted_ids: np.ndarray  # uint64
    order: Optional[np.ndarray]  # int64
    count: int
    identity: bool


def index_ids(ids: array) -> tuple[IdIndex, int]:
    """Sort ``ids`` for lookups; also return the first position whose id appears at an
    earlier position (-1 when every id is unique)."""
    values = np.frombuffer(ids, dtype=np.int64) if len(ids) else np.zeros(0, dtype=np.int64)
    if (values[1:] > values[:-1]).all():  # the common case: written in id order
        if len(values) == 0 or (values[0] == 0 and values[-1] == len(values) - 1):
            return IdIndex(np.zeros(0, dtype=np.uint64), None, len(values), True), -1
        return IdIndex(values.astype(np.uint64), None, len(values), False), -1
    order = np.argsort(values, kind="stable")  # equal ids keep their file order
    ordered = values[order]
    repeated = ordered[1:] == ordered[:-1]
    first_repeat = int(order[1:][repeated].min()) if repeated.any() else -1
    return IdIndex(ordered.astype(np.uint64), order, len(values), False), first_repeat


def dependency_positions(index: IdIndex, deps: array) -> tuple[np.ndarray, int]:
    """The position of the node each dependency names (int64), and the index in ``deps`` of
    the first dependency that names no node (-1 when all are known)."""
    positions, missing = _positions(index, _uint64(deps))
    first_missing = int(np.argmax(missing)) if missing.any() else -1
    return positions, first_missing


def usable_deps(index: IdIndex, ids: array, deps: array, dep_start: array) -> tuple[array, array]:
    """``deps`` and ``dep_start`` without the dependencies that name no node, nor those of
    a node on its own id."""
    wanted = _uint64(deps)
    starts = np.frombuffer(dep_start, dtype=np.int64)
    owners = np.repeat(np.arange(len(starts) - 1, dtype=np.int64), np.diff(starts))
    own = wanted == np.frombuffer(ids, dtype=np.uint64)[owners] if len(wanted) else wanted > 0
    keep = ~(_positions(index, wanted)[1] | own)
    kept = array("Q")
    kept.frombytes(wanted[keep].tobytes())
    return kept, to_array(np.concatenate(([0], np.cumsum(keep)))[starts])


def _uint64(values: array) -> np.ndarray:
    return np.frombuffer(values, dtype=np.uint64) if len(values) else np.zeros(0, np.uint64)


def _positions(index: IdIndex, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The position of the node each id of ``wanted`` names (int64), and which name none."""
    if index.identity:
        return wanted.astype(np.int64), wanted >= np.uint64(index.count)
    found_at = np.searchsorted(index.sorted_ids, wanted)  # no ids: identity, above
    np.minimum(found_at, index.count - 1, out=found_at)
    missing = index.sorted_ids[found_at] != wanted
    positions = found_at if index.order is None else index.order[found_at]
    return positions.astype(np.int64, copy=False), missing


def owner_of(dep_start: array, k: int) -> int:
    """The node whose dependency list holds ``deps[k]``."""
    starts = np.frombuffer(dep_start, dtype=np.int64)
    return int(np.searchsorted(starts, k, side="right")) - 1


def successor_rows(preds: np.ndarray, pred_start: array) -> tuple[array, array]:
    """``(succs, succ_start)``: for each node, the nodes that list it as a dependency, in
    increasing position (a node listed twice by the same node appears twice)."""
    starts = np.frombuffer(pred_start, dtype=np.int64)
    count = len(starts) - 1
    owners = np.repeat(np.arange(count, dtype=np.int64), np.diff(starts))
    succs = owners[np.argsort(preds, kind="stable")]
    succ_start = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(preds, minlength=count), out=succ_start[1:])
    return to_array(succs), to_array(succ_start)


def to_array(values: np.ndarray) -> array:
    """``values`` as an ``array('q')``."""
    out = array("q")
    out.frombytes(np.ascontiguousarray(values, dtype=np.int64).tobytes())
    return out
