"""What the shipped ASTRA-sim (518bd51, Chakra feeder v3) requires of each node, beyond
the Chakra schema: checked by :mod:`chakra.et.graph_checks`, honoured by the converters.

Facts, checked against the binary in ``../shared/tools/astra-sim`` (see its README):

- ``pg_name`` is read with ``std::stoi`` and names a communicator group whose id must be
  above 0 (``CommunicatorGroup::set_id`` asserts ``id > 0``); an exception while handling a
  node is swallowed and the node never runs.
- Collectives it runs: ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL (timed by its
  network) and BROADCAST (replays ``duration_micros``). The others abort it ("Unsupported
  collective comm type"): :data:`STAND_INS` says what converters write instead.
- A send needs ``comm_dst``, a recv ``comm_src`` (both: the global rank at the other end;
  the near end is the rank running the file, so a send's ``comm_src`` and a recv's
  ``comm_dst`` are not read), and both a ``comm_tag``; missing ones throw, swallowed.
- ``is_cpu_op`` is optional: absent, it reads as false (the GPU slot), as in ASTRA-sim's own
  custom-collective examples, which write it on no node.
- A METADATA node aborts it: its statistics have no case for one (Statistics.cc).
- It waits on ``ctrl_deps`` as on ``data_deps`` (checked as cycles over both together).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from chakra.et.schema import CollectiveCommType, NodeType

C = CollectiveCommType

#: Collectives ASTRA-sim lacks -> the one written instead. A barrier moves no data: a
#: zero-byte all-reduce still meets every member. Rooted collectives replay their measured
#: time as a broadcast does; a block reduce-scatter is a reduce-scatter.
STAND_INS: Mapping[CollectiveCommType, CollectiveCommType] = {
    C.BARRIER: C.ALL_REDUCE,
    C.REDUCE: C.BROADCAST,
    C.GATHER: C.BROADCAST,
    C.SCATTER: C.BROADCAST,
    C.REDUCE_SCATTER_BLOCK: C.REDUCE_SCATTER,
}
_UNSUPPORTED = frozenset(int(t) for t in STAND_INS)

#: Largest value ``std::stoi`` reads.
INT32_MAX = 2**31 - 1


def is_group_id(name: object) -> bool:
    """Whether ``name`` is a ``pg_name`` ASTRA-sim accepts: digits only, 1 to 2**31 - 1."""
    return (
        isinstance(name, str) and name.isascii() and name.isdigit() and 0 < int(name) <= INT32_MAX
    )


def astra_sim_faults(
    node: Any,
    values: Mapping[str, Any],
    rules: bool = True,
    comm_groups: Optional[frozenset[str]] = None,
) -> list[tuple[str, str]]:
    """``(kind, what)`` for each thing about ``node`` that the shipped ASTRA-sim cannot
    run; ``values`` holds the node's attribute values by name (first of each). ``rules``:
    the per-node rules of the module doc; ``comm_groups``: the ids of a comm-group file,
    a ``pg_name`` outside them is ``unknown_group`` (None: not checked)."""
    faults = []
    pg_name: Optional[Any] = values.get("pg_name")
    if comm_groups is not None and pg_name and pg_name not in comm_groups:
        faults.append(
            (
                "unknown_group",
                f"names group {str(pg_name)[:40]!r}, which the comm-group file does not list",
            )
        )
    if not rules:
        return faults
    if node.type == NodeType.METADATA_NODE:
        what = "is a METADATA node: the ASTRA-sim of 2026-03 aborts on one (use a comm-group file)"
        faults.append(("astra_sim_unsupported", what))
    if isinstance(pg_name, str) and not is_group_id(pg_name):  # another kind: wrong_attr_kind
        faults.append(
            (
                "invalid_pg_name",
                f"has pg_name {str(pg_name)[:40]!r}, not an ASTRA-sim "
                "group id (an integer from 1 to 2**31 - 1: read with std::stoi, "
                "group 0 is refused)",
            )
        )
    comm_type = values.get("comm_type")
    if node.type == NodeType.COMM_COLL_NODE and comm_type in _UNSUPPORTED:
        name = CollectiveCommType(comm_type).name
        faults.append(
            (
                "astra_sim_unsupported",
                f"has comm_type {name}, which ASTRA-sim does "
                f"not run (write it as {STAND_INS[C(comm_type)].name})",
            )
        )
    if node.type in (NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE):
        needed = (
            ("comm_dst", "comm_tag")
            if node.type == NodeType.COMM_SEND_NODE
            else ("comm_src", "comm_tag")
        )
        for name in needed:
            if name not in values:
                faults.append(
                    (
                        "missing_attr",
                        f"is a {NodeType(node.type).name} without {name}, which ASTRA-sim requires",
                    )
                )
    return faults
