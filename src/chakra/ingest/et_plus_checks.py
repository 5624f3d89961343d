"""What an ET+ must satisfy to be converted: checked by the converter when it reads one
(:mod:`chakra.convert.et_plus_input`) and by the linker before it writes one
(:mod:`chakra.link.et_plus`), so that the linker never writes what the converter refuses.

* Input limits (docs/formats.md): ids 0 to below 2^62 (the converter numbers the nodes it
  adds after the largest, and ids must stay below 2^63), header integers 0 to 2^63-1, times
  and durations finite and within +-2^62 ns (in µs here), so that sums of two still fit:
  :func:`check_header`, :func:`check_node_id`, :func:`check_node_times`.
* No parent cycle, over ``ctrl_deps`` nor over the hierarchy the converter walks (a node's
  ``ran_under`` where that is a node, else its ``ctrl_deps``): :func:`check_parents`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Callable, Optional

from chakra.errors import PathLike, TraceFormatError
from chakra.ingest.et_plus_model import EtPlusNode
from chakra.ingest.parent_cycles import cycle_error, names_itself, parent_cycle

ID_LIMIT = 2**62
HEADER_LIMIT = 2**63
TIME_LIMIT_US = 2**62 / 1000
#: The timed fields of an ET+ node (µs).
TIME_FIELDS = ("ts", "dur", "inclusive_dur", "exclusive_dur", "idle_gap")
HEADER_FIELDS = ("pid", "start_ts", "finish_ts")


def check_header(path: PathLike, header: Any) -> None:
    """Refuse a ``pid``, ``start_ts`` or ``finish_ts`` of ``header`` (a decoded ET+ header,
    a HostTrace) outside 0 to 2^63-1."""
    for name in HEADER_FIELDS:
        value = getattr(header, name)
        if value is not None and not 0 <= value < HEADER_LIMIT:
            raise TraceFormatError(path, f"header {name} {value} is not 0 to 2^63-1")


def check_node_id(path: PathLike, node_id: int) -> None:
    """Refuse a node id outside 0 to 2^62-1."""
    if not 0 <= node_id < ID_LIMIT:
        problem = "is negative (ids are unsigned)" if node_id < 0 else "is 2^62 or more"
        raise TraceFormatError(path, f"node id {node_id} {problem}")


def check_node_times(path: PathLike, node: EtPlusNode) -> None:
    """Refuse a time or duration of ``node`` that is not finite or not within +-2^62 ns."""
    limit = TIME_LIMIT_US
    for name in TIME_FIELDS:
        value = getattr(node, name)
        if value is not None and not -limit < value < limit:  # NaN fails too
            raise TraceFormatError(
                path, f"node {node.id}: {name} {value} is not a finite time within +-2^62 ns"
            )


def check_ranges(path: PathLike, header: Any, nodes: Iterable[EtPlusNode]) -> None:
    """Refuse numbers a ``.et`` cannot hold (see the module doc), naming the file and node."""
    check_header(path, header)
    limit = TIME_LIMIT_US
    for node in nodes:
        if not 0 <= node.id < ID_LIMIT:
            check_node_id(path, node.id)
        for name in TIME_FIELDS:
            value = getattr(node, name)
            if value is not None and not -limit < value < limit:  # NaN fails too
                check_node_times(path, node)


def check_parents(
    path: PathLike, nodes: Sequence[EtPlusNode], ran_under_path: Optional[PathLike] = None
) -> None:
    """Refuse a parent cycle over ``ctrl_deps``, or over the op hierarchy the converter walks
    (a node's ``ran_under`` where that names a node, else its ``ctrl_deps``), naming the file
    (``ran_under_path``, when given, for a cycle that only ``ran_under`` closes) and the
    nodes. Linear (:mod:`chakra.ingest.parent_cycles`): the walks start only at the nodes
    :func:`may_close_a_cycle`."""
    starts = [node.id for node in nodes if may_close_a_cycle(node)]
    if starts:
        by_id = {node.id: node for node in nodes}  # the last of a repeated id
        check_parents_from(path, starts, by_id.get, ran_under_path)


def may_close_a_cycle(node: EtPlusNode) -> bool:
    """Whether a cycle may go through ``node``'s parent edge: one whose ``ctrl_deps`` is not
    below its id (but a root naming itself), or one with a ``ran_under``. Every cycle has
    such a node (ids cannot decrease all the way round)."""
    parent = node.ctrl_deps
    return node.ran_under is not None or (
        parent is not None and parent >= node.id and not names_itself(node.id, parent, node.name)
    )


def check_parents_from(
    path: PathLike,
    starts: Sequence[int],
    node_of: Callable[[int], Optional[EtPlusNode]],
    ran_under_path: Optional[PathLike] = None,
) -> None:
    """:func:`check_parents` of the nodes ``node_of`` gives by id (None: no such node), given
    the ids of every node that :func:`may_close_a_cycle` as ``starts``. Only the nodes on
    the walks from there are asked for (a node may be built when asked)."""

    def parent_of(node_id: int) -> Optional[int]:
        node = node_of(node_id)
        parent = None if node is None else node.ctrl_deps
        if parent is None or node_of(parent) is None or names_itself(node_id, parent, node.name):
            return None
        return parent

    def ran_under_of(node_id: int) -> Optional[int]:
        node = node_of(node_id)
        ran_under = None if node is None else node.ran_under
        if ran_under is not None and node_of(ran_under) is not None:
            return ran_under
        return parent_of(node_id)

    for relation, what, named in (
        (parent_of, "parent", path),
        (ran_under_of, "parent (ran_under)", ran_under_path or path),
    ):
        cycle = parent_cycle(starts, relation)
        if cycle:
            raise cycle_error(named, cycle, what)
