"""Line up each rank's communication nodes per process group and make them agree (pure).

Steps, each linear in the number of communication nodes:

1. *Split*: a group name used by more ranks than its ``pg_size`` (1.0.1 traces name
   sub-groups by size and order of use, so every rank's tensor-parallel pair is ``"1"``)
   is split into blocks of consecutive ranks, each block a group; the first keeps the name,
   the others take new numbers. Assumed, so counted and reported.
2. *Place*: a communication node with no group (an NCCL kernel whose launch was lost) joins
   the group of the other communication nodes on its (device, stream) of that rank, when
   they are all of one group; its place among them is its order in the file.
3. *Align*: per group and position, the ranks' nodes are compared: a guessed
   ``comm_type`` or an unknown size (0) is filled when the ranks that know agree; any other
   difference (type, kind, size, count) is a :class:`Disagreement`.
4. *Ends*: a send or recv without its ends (``comm_src``/``comm_dst``, which ASTRA-sim
   requires) in a group of two ranks gets them, the peer being the other member, with a
   ``comm_tag`` numbering the messages of each direction.

Each group's members (:attr:`Agreement.groups`) are the ranks its nodes list in
``pg_ranks``, else the ranks that use it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Optional

import msgspec

P2P = "p2p"


class CommRecord(msgspec.Struct, frozen=True):
    """One communication node of a rank, in file order. ``kind``: ``"collective"`` or
    ``"p2p"``; ``comm_type`` None for p2p; ``size`` 0 when unknown; ``stream`` as
    ``(device, stream)`` for GPU nodes."""

    node_id: int
    name: str
    kind: str
    comm_type: Optional[int]
    size: int
    pg_name: Optional[str]
    pg_size: Optional[int] = None
    type_guessed: bool = False
    stream: Optional[tuple[int, int]] = None
    pg_ranks: Optional[tuple[int, ...]] = None
    has_ends: bool = False  # a send/recv that names its comm_src and comm_dst
    is_send: Optional[bool] = None  # a send (True) or a recv (False)


class Fill(msgspec.Struct, frozen=True):
    """What one node gets from its peers (None: unchanged)."""

    pg_name: Optional[str] = None
    comm_type: Optional[int] = None
    size: Optional[int] = None
    comm_src: Optional[int] = None
    comm_dst: Optional[int] = None
    comm_tag: Optional[int] = None


class Disagreement(msgspec.Struct, frozen=True):
    """Ranks that say different things about one position of one group."""

    pg_name: str
    position: int
    says: dict[int, str]  # rank -> what its node is

    def message(self) -> str:
        said = "; ".join(f"rank {r}: {what}" for r, what in sorted(self.says.items()))
        return f"pg {self.pg_name!r} operation #{self.position + 1}: {said}"


class Agreement(msgspec.Struct, frozen=True):
    """The outcome: fills per rank (node id -> Fill), disagreements, groups compared (used by
    two ranks or more) and not compared (one rank only), and notes of what was assumed."""

    fills: dict[int, dict[int, Fill]]
    disagreements: list[Disagreement]
    compared: list[str]
    not_compared: list[str]
    notes: list[str]
    counts: dict[str, int]
    groups: dict[str, list[int]] = {}  # group -> member ranks
    #: rank -> ids of its send/recv nodes whose ends (comm_src/comm_dst) are still unknown
    unpaired: dict[int, list[int]] = {}


def agree(ranks: Sequence[Sequence[CommRecord]]) -> Agreement:
    """Make ``ranks`` (rank = position; each rank's records in file order) agree."""
    counts: Counter[str] = Counter()
    notes: list[str] = []
    names = _split_groups(ranks, counts, notes)
    names = _place_orphans(ranks, names, counts)
    lined: dict[str, dict[int, list[CommRecord]]] = defaultdict(lambda: defaultdict(list))
    for rank, records in enumerate(ranks):
        for record, name in zip(records, names[rank]):
            if name is not None:
                lined[name][rank].append(record)
    fills: dict[int, dict[int, Fill]] = defaultdict(dict)
    for rank, records in enumerate(ranks):
        for record, name in zip(records, names[rank]):
            if name != record.pg_name:
                fills[rank][record.node_id] = Fill(pg_name=name)
    disagreements: list[Disagreement] = []
    compared = sorted(pg for pg, by_rank in lined.items() if len(by_rank) > 1)
    for pg in compared:
        _align(pg, lined[pg], fills, disagreements, counts)
    groups = _members(lined)
    _fill_ends(lined, groups, fills, counts)
    not_compared = sorted(pg for pg, by_rank in lined.items() if len(by_rank) == 1)
    unplaced = counts.get("orphans not placed in a group", 0)
    if unplaced:
        notes.append(f"{unplaced} communication nodes in no process group could not be placed")
    unpaired = _unpaired(ranks, fills)
    return Agreement(
        {r: f for r, f in fills.items() if f},
        disagreements,
        compared,
        not_compared,
        notes,
        dict(counts),
        groups,
        unpaired,
    )


def _unpaired(ranks: Sequence[Sequence[CommRecord]], fills: dict) -> dict[int, list[int]]:
    """The send/recv nodes of each rank left without ends once ``fills`` are applied."""
    unpaired = {}
    for rank, records in enumerate(ranks):
        left = [
            r.node_id
            for r in records
            if r.kind == P2P
            and not r.has_ends
            and fills[rank].get(r.node_id, Fill()).comm_src is None
        ]
        if left:
            unpaired[rank] = left
    return unpaired


def _members(lined: dict[str, dict[int, list[CommRecord]]]) -> dict[str, list[int]]:
    """Each group's ranks: those its nodes list in ``pg_ranks`` (when every rank that lists
    them agrees), else the ranks that use it."""
    groups = {}
    for pg, by_rank in lined.items():
        listed = {r.pg_ranks for records in by_rank.values() for r in records if r.pg_ranks}
        groups[pg] = sorted(next(iter(listed)) if len(listed) == 1 else by_rank)
    return groups


def _fill_ends(lined: dict[str, dict[int, list[CommRecord]]], groups: dict[str, list[int]],
               fills: dict, counts: Counter) -> None:  # fmt: skip
    """Step 4 of the module doc."""
    for pg, by_rank in lined.items():
        members = groups[pg]
        if len(members) != 2:
            continue
        for rank, records in by_rank.items():
            if rank not in members:
                continue
            peer = members[1] if members[0] == rank else members[0]
            sent: Counter[bool] = Counter()
            for record in records:
                if record.kind != P2P or record.has_ends or record.comm_type is not None:
                    continue
                send = bool(record.is_send)
                src, dst = (rank, peer) if send else (peer, rank)
                before = fills[rank].get(record.node_id, Fill())
                fills[rank][record.node_id] = msgspec.structs.replace(
                    before, comm_src=src, comm_dst=dst, comm_tag=sent[send]
                )
                sent[send] += 1
                counts["send/recv ends filled from the group's two ranks"] += 1


def _split_groups(ranks: Sequence[Sequence[CommRecord]], counts: Counter, notes: list) -> list:
    """Each record's group name after splitting over-used names (see module doc)."""
    users: dict[str, set[int]] = defaultdict(set)
    sizes: dict[str, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    for rank, records in enumerate(ranks):
        for record in records:
            if record.pg_name is not None:
                users[record.pg_name].add(rank)
                if record.pg_size:
                    sizes[record.pg_name][rank].add(record.pg_size)
    numbers = [int(n) for n in users if n.isascii() and n.isdigit() and len(n) < 19]
    next_number = max(numbers, default=-1) + 1
    renamed: dict[tuple[str, int], str] = {}
    for pg in sorted(users, key=lambda n: (len(n), n)):
        blocks = _blocks(sorted(users[pg]), sizes[pg])
        if len(blocks) < 2:
            continue
        size = "/".join(sorted({str(len(b)) for b in blocks}))
        members = sorted(users[pg])
        for index, block in enumerate(blocks):
            name = pg if index == 0 else str(next_number + index - 1)
            renamed.update(((pg, rank), name) for rank in block)
        next_number += len(blocks) - 1
        counts["groups split by consecutive ranks"] += len(blocks)
        shown = ", ".join(f"{renamed[(pg, b[0])]}: ranks {b}" for b in blocks)
        notes.append(
            f"group {pg!r} of {size} members is used by {len(members)} ranks: "
            f"taken as groups of consecutive ranks ({shown})"
        )
    return [
        [
            renamed.get((r.pg_name, rank), r.pg_name) if r.pg_name is not None else None
            for r in records
        ]
        for rank, records in enumerate(ranks)
    ]


def _blocks(members: list[int], sizes: Mapping[int, set[int]]) -> list[list[int]]:
    """``members`` cut into blocks of consecutive ranks, each as large as its ranks say their
    group is (a 1.0.1 pair group on 5 ranks: sizes 2, 2, 2, 2, 1 give [0, 1], [2, 3], [4]);
    one block when a rank's size is unknown or several, or the sizes do not tile."""
    blocks: list[list[int]] = []
    i = 0
    while i < len(members):
        said = sizes.get(members[i], set())
        size = next(iter(said)) if len(said) == 1 else 0
        block = members[i : i + size]
        if not size or len(block) < size or any(sizes.get(r) != {size} for r in block):
            return [members]
        blocks.append(block)
        i += size
    return blocks


def _place_orphans(ranks: Sequence[Sequence[CommRecord]], names: list, counts: Counter) -> list:
    """Names with each group-less record placed by its stream (see module doc)."""
    placed = []
    for records, rank_names in zip(ranks, names):
        by_stream: dict[object, set[str]] = defaultdict(set)
        for record, name in zip(records, rank_names):
            if name is not None and record.stream is not None:
                by_stream[record.stream].add(name)
        row = list(rank_names)
        for i, (record, name) in enumerate(zip(records, rank_names)):
            if name is not None:
                continue
            groups = by_stream.get(record.stream, set()) if record.stream is not None else set()
            if len(groups) == 1:
                row[i] = next(iter(groups))
                counts["orphan groups filled from the stream"] += 1
            else:
                counts["orphans not placed in a group"] += 1
        placed.append(row)
    return placed


def _describe(record: CommRecord) -> str:
    what = record.kind if record.comm_type is None else f"comm_type {record.comm_type}"
    guessed = " (guessed)" if record.type_guessed else ""
    return f"node {record.node_id} {record.name[:40]!r} {what}{guessed}, {record.size} bytes"


def _align(pg: str, by_rank: dict[int, list[CommRecord]], fills: dict, disagreements: list,
           counts: Counter) -> None:  # fmt: skip
    lengths = {rank: len(records) for rank, records in by_rank.items()}
    if len(set(lengths.values())) > 1:
        says = {rank: f"{n} communication nodes" for rank, n in lengths.items()}
        disagreements.append(Disagreement(pg, min(lengths.values()), says))
    for position in range(min(lengths.values())):
        at = {rank: records[position] for rank, records in by_rank.items()}
        known_types = {(r.kind, r.comm_type) for r in at.values() if not r.type_guessed}
        all_types = {(r.kind, r.comm_type) for r in at.values()}
        known_sizes = {r.size for r in at.values() if r.size}
        if len(known_types) > 1 or len(known_sizes) > 1 or (not known_types and len(all_types) > 1):
            says = {rank: _describe(r) for rank, r in at.items()}
            disagreements.append(Disagreement(pg, position, says))
            continue
        for rank, record in at.items():
            comm_type = size = None
            if record.type_guessed and known_types:
                kind, value = next(iter(known_types))
                if kind == record.kind:
                    comm_type = value
                    counts["comm types filled from peers"] += 1
                else:  # a point-to-point on the peers: send or recv, the node cannot say
                    counts["guessed comm types left (peers: point-to-point)"] += 1
            if not record.size and known_sizes:
                size = next(iter(known_sizes))
                counts["comm sizes filled from peers"] += 1
            if comm_type is not None or size is not None:
                before = fills[rank].get(record.node_id, Fill())
                fills[rank][record.node_id] = msgspec.structs.replace(
                    before, comm_type=comm_type, size=size
                )
