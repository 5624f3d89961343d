"""Parent (``ctrl_deps``) cycles: found when a host ET or ET+ is read, refused naming nodes.

Each node names at most one parent, so following parents from a node either ends (no parent,
a parent that is no node, or a root naming itself) or comes back to a node of the same walk:
a parent cycle, which every walk up or down the op hierarchy would follow forever.

PyTorch's process root names itself as its parent (``[pytorch|profiler|execution_trace|
process]``, id 1, parent 1, in every host ET we have seen); a root of the names in
:data:`SELF_PARENT_NAMES` may do so (:func:`names_itself`). Any other node naming itself is a
cycle of one node.

Linear time: a cycle of two nodes or more holds a node whose parent's id is larger than its
own (ids cannot decrease all the way round), and a cycle of one is a node naming itself; so
walks start only at such nodes (the *starts*: in a PyTorch trace, none but the process root,
whose ops get ids as they start, after their parent), and a node reached by an earlier walk,
which ended at a root, ends this one too: each node is walked once at most.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Callable, Optional

from chakra.errors import PathLike, TraceFormatError
from chakra.ingest.host_model import HostOp
from chakra.ingest.vocabulary import PROCESS_ROOT_NAMES, THREAD_ROOT_NAMES

#: Names of the roots that may name themselves as their parent.
SELF_PARENT_NAMES = PROCESS_ROOT_NAMES | THREAD_ROOT_NAMES
#: Node ids a refusal shows, at most (a longer cycle is shown by its first ones and its size).
SHOWN_IDS = 6


def names_itself(node_id: int, parent: Optional[int], name: str) -> bool:
    """Whether a node is a root naming itself as its parent, as PyTorch's process root does
    (then it has no parent; any other node naming itself is a cycle)."""
    return parent == node_id and name in SELF_PARENT_NAMES


def parent_cycle(starts: Iterable[int], parent_of: Callable[[int], Optional[int]]) -> list[int]:
    """One parent cycle through a node of ``starts`` (see the module doc), as node ids from
    child to parent with the first repeated at the end (``[5, 7, 5]``), or ``[]`` when there
    is none. ``parent_of(node)`` is the parent of a node, when that is a node; None for a
    root (also one that :func:`names_itself`)."""
    ended: set[int] = set()  # walks from here end at a root
    for start in starts:
        walk: dict[int, int] = {}  # node -> its position on this walk
        node: Optional[int] = start
        while node is not None and node not in ended and node not in walk:
            walk[node] = len(walk)
            node = parent_of(node)
        if node is not None and node in walk:
            path = list(walk)
            return [*path[walk[node] :], node]
        ended.update(walk)
    return []


def describe_cycle(cycle: Sequence[int]) -> str:
    """``5 -> 7 -> 5``; a cycle of more than :data:`SHOWN_IDS` nodes is cut short and its
    size given (``1 -> 2 -> 3 -> 4 -> 5 -> 6 -> 7 -> ... (40 nodes)``)."""
    size = len(cycle) - 1
    shown = " -> ".join(str(i) for i in cycle[: SHOWN_IDS + 1])
    return shown if size <= SHOWN_IDS else f"{shown} -> ... ({size} nodes)"


def cycle_error(path: PathLike, cycle: Sequence[int], what: str = "parent") -> TraceFormatError:
    """The one-line refusal of a cycle (``what``: the relation that closes it)."""
    return TraceFormatError(path, f"{what} cycle through nodes {describe_cycle(cycle)}")


def check_host_parents(path: PathLike, ops: Sequence[HostOp]) -> None:
    """Raise TraceFormatError naming ``path`` and the nodes of a parent cycle among ``ops``
    (a host ET's, by id, ids unique)."""
    starts = [
        op.id
        for op in ops
        if op.parent_id >= op.id and not names_itself(op.id, op.parent_id, op.name)
    ]
    if not starts:
        return
    by_id = {op.id: op for op in ops}

    def parent_of(node_id: int) -> Optional[int]:
        op = by_id[node_id]
        if op.parent_id not in by_id or names_itself(node_id, op.parent_id, op.name):
            return None
        return op.parent_id

    cycle = parent_cycle(starts, parent_of)
    if cycle:
        raise cycle_error(path, cycle)
