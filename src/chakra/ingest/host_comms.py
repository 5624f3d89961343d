"""Communication metadata of host ETs: the process-group table and ``record_param_comms``."""

from __future__ import annotations

from typing import Any, Optional

import msgspec

from chakra.ingest.host_json import PROCESS_GROUPS_DECODER, RawAttr
from chakra.ingest.host_model import CommAttrs, HostOp, OpArgs, ProcessGroup

#: attrs of ``record_param_comms`` in schema 1.1.0+, and the CommAttrs field each fills.
COMM_ATTR_FIELDS = {
    "collective_name": "collective_name",
    "dtype": "dtype",
    "in_msg_nelems": "in_msg_nelems",
    "out_msg_nelems": "out_msg_nelems",
    "in_split_size": "in_split_size",
    "out_split_size": "out_split_size",
    "global_rank_start": "global_rank_start",
    "global_rank_stride": "global_rank_stride",
    "pg_name": "pg_name",
    "pg_desc": "pg_desc",
    "pg_size": "pg_size",
}


def parse_process_groups(inputs: OpArgs) -> tuple[tuple[ProcessGroup, ...], Optional[str]]:
    """The groups listed by a ``## process_group:init ##`` op, and a note if unreadable.

    Its single input is a string holding a JSON list of group descriptors.
    """
    text = inputs.values[0] if inputs.values else None
    if not isinstance(text, str):
        return (), "process_group:init holds no JSON string; process groups unknown"
    try:
        raw_groups = PROCESS_GROUPS_DECODER.decode(text)
    except msgspec.DecodeError as exc:
        return (), f"process_group:init is not a valid group list ({exc}); groups unknown"
    groups = tuple(
        ProcessGroup(
            pg_name=str(g.pg_name),
            pg_desc=g.pg_desc,
            backend_config=g.backend_config,
            backend_id=g.backend_id,
            ranks=tuple(g.ranks),
            group_size=g.group_size,
            group_count=g.group_count,
        )
        for g in raw_groups
    )
    return groups, None


def comm_attrs_from_attrs(attrs: list[RawAttr]) -> Optional[CommAttrs]:
    """CommAttrs from the 1.1.0+ attrs of a ``record_param_comms`` node, if it has them."""
    found = {COMM_ATTR_FIELDS[a.name]: a.value for a in attrs if a.name in COMM_ATTR_FIELDS}
    if "collective_name" not in found:
        return None
    if found.get("pg_name") is not None:
        found["pg_name"] = str(found["pg_name"])
    return CommAttrs(**found)


def _typed(values: list, types: list, index: int, prefix: str) -> Any:
    if 0 <= index < len(values) and index < len(types) and str(types[index]).startswith(prefix):
        return values[index]
    return None


def comm_attrs_from_inputs(inputs: OpArgs, outputs: OpArgs) -> CommAttrs:
    """CommAttrs from the positional inputs of ``record_param_comms`` (schemas 1.0.2-1.0.4).

    1.0.2: [tensors, seq, pg id (Int), rank, collective name, in splits, out splits, size];
    1.0.3+: [tensors, seq, (pg name, pg desc), rank, collective name, in splits, out splits,
    global rank start, global rank stride, size]. ``wait`` records have no tensor list, so
    positions shift by one. Entries of unexpected type are skipped. Message sizes are the
    element counts of the input and output tensors.
    """
    values, types = inputs.values, inputs.types
    first = str(types[0]) if types else ""
    shift = 0 if "Tensor" in first else -1

    def at(index: int, prefix: str) -> Any:
        return _typed(values, types, index + shift, prefix)

    pg = at(2, "Tuple[String")
    pg_id = at(2, "Int")
    pg_name = str(pg[0]) if isinstance(pg, list) and pg else None
    pg_desc = str(pg[1]) if isinstance(pg, list) and len(pg) > 1 else None
    if pg_name is None and pg_id is not None:
        pg_name = str(pg_id)
    modern = pg is not None
    in_elements = sum(t.num_elements for t in inputs.tensors())
    out_elements = sum(t.num_elements for t in outputs.tensors())
    return CommAttrs(
        collective_name=at(4, "String"),
        in_msg_nelems=in_elements if shift == 0 else None,
        out_msg_nelems=out_elements if shift == 0 else None,
        in_split_size=at(5, "GenericList"),
        out_split_size=at(6, "GenericList"),
        global_rank_start=at(7, "Int") if modern else None,
        global_rank_stride=at(8, "Int") if modern else None,
        pg_size=at(9 if modern else 7, "Int"),
        pg_name=pg_name or None,
        pg_desc=pg_desc or None,
        seq=at(1, "Int"),
    )


def resolve_backend_ids(ops: tuple[HostOp, ...], groups: tuple[ProcessGroup, ...]) -> tuple:
    """Schema 1.0.2 names a collective's group by backend id; map it to the group's name."""
    by_backend = {str(g.backend_id): g for g in groups if g.backend_id is not None}
    if not by_backend:
        return ops
    resolved = []
    for op in ops:
        group = by_backend.get(op.comm.pg_name) if op.comm and op.comm.pg_name else None
        if group is not None:
            comm = msgspec.structs.replace(op.comm, pg_name=group.pg_name, pg_desc=group.pg_desc)
            op = msgspec.structs.replace(op, comm=comm)
        resolved.append(op)
    return tuple(resolved)
