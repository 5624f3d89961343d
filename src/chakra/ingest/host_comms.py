"""Communication metadata of host ETs: the process-group table and ``record_param_comms``."""

from __future__ import annotations

from collections.abc import Iterable
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


#: Input limits of a process-group table: ranks are ids (< 2^63), and a group lists at most
#: this many ranks (``ranks: []`` stands for ``range(group_size)``, built in memory), and so
#: do all groups of a table together (many groups of ``ranks: []`` and a big group_size
#: are a few bytes that expand to more ranks than memory holds).
RANK_LIMIT = 2**63
MAX_GROUP_SIZE = 1 << 24
MAX_TABLE_RANKS = 1 << 24


def group_problem(ranks: Any, group_size: Any) -> Optional[str]:
    """What is wrong with a group's ``ranks`` and ``group_size`` (None: nothing)."""
    if ranks is not None and not (
        isinstance(ranks, (list, tuple))
        and all(type(r) is int and 0 <= r < RANK_LIMIT for r in ranks)
    ):
        return f"ranks {str(ranks)[:60]} are not a list of ranks 0 to 2^63-1"
    if group_size is not None and not (
        type(group_size) is int and 0 <= group_size <= MAX_GROUP_SIZE
    ):
        return f"group_size {str(group_size)[:60]} is not 0 to {MAX_GROUP_SIZE:,}"
    return None


def table_problem(member_counts: Iterable[int]) -> Optional[str]:
    """What is wrong with a table whose groups have ``member_counts`` ranks each (listed,
    or ``group_size`` for ``ranks: []``), once every group passed :func:`group_problem`."""
    total = sum(member_counts)
    if total > MAX_TABLE_RANKS:
        return (
            f"its groups hold {total:,} ranks in all (ranks: [] stands for group_size "
            f"ranks), over {MAX_TABLE_RANKS:,}"
        )
    return None


def _is_group_number(name: str) -> bool:
    """Whether a group name is a number (ASCII digits, below 2^63: ``"²"`` is a digit that
    ``int`` refuses, and thousands of digits would not parse)."""
    return name.isascii() and name.isdigit() and len(name) < 19


def parse_process_groups(inputs: OpArgs) -> tuple[tuple[ProcessGroup, ...], Optional[str]]:
    """The groups listed by a ``## process_group:init ##`` op, and a note if unreadable.

    Its single input is a string holding a JSON list of group descriptors.
    """
    values = inputs.values
    text = values[0] if isinstance(values, list) and values else None
    if not isinstance(text, str):
        return (), "process_group:init holds no JSON string; process groups unknown"
    try:
        raw_groups = PROCESS_GROUPS_DECODER.decode(text)
    except msgspec.DecodeError as exc:
        return (), f"process_group:init is not a valid group list ({exc}); groups unknown"
    except RecursionError:  # the JSON in the string nests deeper than Python decodes
        return (), "process_group:init is nested too deep to decode; groups unknown"
    for g in raw_groups:
        problem = group_problem(g.ranks, g.group_size)
        if problem is not None:
            name = str(g.pg_name)[:40]
            return (), f"process_group:init group {name!r}: {problem}; groups unknown"
    problem = table_problem(len(g.ranks or ()) or (g.group_size or 0) for g in raw_groups)
    if problem is not None:
        return (), f"process_group:init: {problem}; groups unknown"
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

    1.0.1 and 1.0.2: [tensors, seq, pg id (Int), rank, collective name, in splits, out
    splits, size], the pg id being a backend id (1.0.2) or the group's address (1.0.1);
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
        pg_name = str(pg_id)  # until name_groups names it
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
        pg_address=pg_id if pg is None else None,
        pg_rank=at(3, "Int"),
    )


def name_groups(
    ops: tuple[HostOp, ...], groups: tuple[ProcessGroup, ...]
) -> tuple[tuple[HostOp, ...], list[str]]:
    """Give every ``record_param_comms`` a group name that is the same on every rank, and
    say what was guessed (notes, with counts).

    - A group Int found among the ``## process_group:init ##`` table's backend ids (1.0.2)
      takes that group's name and description.
    - Any other Int is an address (1.0.1: the ProcessGroup object's, different on every
      rank). With a table, an address whose size and this rank's place in it fit exactly
      one listed group takes its name (the rank's global rank is its place in a group of
      the world's size). The others are named ``"0"``, ``"1"``... by group size (largest
      first: the world group, which every rank has, becomes ``"0"``), then order of first
      use, after the table's numeric names. Sub-groups of one size (e.g. tensor-parallel
      pairs) get the same name on every rank; ``chakra.ranks`` tells them apart across ranks.
    - A record with no group at all joins the world group ``"0"``.
    ``pg_address`` keeps the Int either way. O(ops).
    """
    by_backend = {g.backend_id: g for g in groups if g.backend_id is not None}
    first_use: dict[int, tuple[int, int]] = {}  # address -> (-size, order of first use)
    no_group = 0
    for op in ops:
        comm = op.comm
        if comm is None:
            continue
        if comm.pg_address is not None and comm.pg_address not in by_backend:
            size = comm.pg_size if isinstance(comm.pg_size, int) else 0
            first_use.setdefault(comm.pg_address, (-size, len(first_use)))
        elif comm.pg_name is None and comm.collective_name not in (None, "wait"):
            no_group += 1
    from_table = _addresses_in_table(ops, groups, set(first_use))
    taken = [int(g.pg_name) for g in groups if _is_group_number(g.pg_name)]
    base = max(taken) + 1 if taken else 0
    ranked = sorted(set(first_use) - set(from_table), key=first_use.__getitem__)
    canonical = {address: str(base + i) for i, address in enumerate(ranked)}
    notes = []
    if from_table:
        notes.append(
            f"{len(from_table)} process groups named by address (1.0.1 style) were "
            "matched to the process_group:init table by size and rank"
        )
    if canonical:
        listed = ", ".join(f"{hex(a)} -> {canonical[a]}" for a in ranked[:8])
        notes.append(
            f"{len(canonical)} process groups named by address (1.0.1 style) were "
            f"identified by size and order of first use: {listed}"
        )
    canonical.update(from_table)
    if no_group:
        notes.append(
            f"{no_group} communication records name no process group: "
            "taken to be the world group '0'"
        )
    if not canonical and not no_group and not by_backend:
        return ops, notes
    return tuple(_named(op, by_backend, canonical) for op in ops), notes


def _named(op: HostOp, by_backend: dict[int, ProcessGroup], canonical: dict[int, str]) -> HostOp:
    comm = op.comm
    if comm is None:
        return op
    if comm.pg_address is not None:
        group = by_backend.get(comm.pg_address)
        if group is not None:
            comm = msgspec.structs.replace(comm, pg_name=group.pg_name, pg_desc=group.pg_desc)
        else:
            comm = msgspec.structs.replace(comm, pg_name=canonical[comm.pg_address])
    elif comm.pg_name is None and comm.collective_name not in (None, "wait"):
        comm = msgspec.structs.replace(comm, pg_name="0")
    else:
        return op
    return msgspec.structs.replace(op, comm=comm)


def _addresses_in_table(
    ops: tuple[HostOp, ...], groups: tuple[ProcessGroup, ...], addresses: set[int]
) -> dict[int, str]:
    """Addresses whose (size, this rank's place) fit groups of the table: each takes one,
    groups that fit alike (same size and members) going in table order to addresses in
    order of first use."""

    def members(group: ProcessGroup) -> tuple[int, ...]:
        return group.ranks or tuple(range(group.group_size or 0))

    listed = [(g, members(g)) for g in groups if members(g)]
    if not listed or not addresses:
        return {}
    world = max(len(m) for _, m in listed)
    places: dict[int, tuple[int, int]] = {}  # address -> (size, place)
    rank = None
    for op in ops:
        comm = op.comm
        if comm is None or comm.pg_address not in addresses:
            continue
        if isinstance(comm.pg_size, int) and isinstance(comm.pg_rank, int):
            places.setdefault(comm.pg_address, (comm.pg_size, comm.pg_rank))
            if comm.pg_size == world:
                rank = comm.pg_rank
    if rank is None:
        return {}
    by_fit: dict[tuple[str, ...], list[int]] = {}
    for address, (size, place) in places.items():  # in order of first use
        fits = tuple(
            g.pg_name for g, m in listed if len(m) == size and m[place : place + 1] == (rank,)
        )
        by_fit.setdefault(fits, []).append(address)
    found: dict[int, str] = {}
    for fits, same in by_fit.items():
        if len(same) <= len(fits):  # groups alike in size and members: in table order
            found.update(zip(same, fits))
    return found
