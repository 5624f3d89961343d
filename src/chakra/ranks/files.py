"""Agreement over Chakra ET files: read each rank's communication nodes, apply the fills.

The pipeline rewrites the ranks' ``.et`` files that need fills (atomically, one node in
memory at a time), so that every consumer (ASTRA-sim, ``chakra_sim``) reads one truth;
``chakra_sim`` applies them to the nodes it reads without touching its inputs, and
``chakra_validate`` only reports.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from chakra.errors import ChakraError, PathLike, read_every_input
from chakra.et import EtReader, EtWriter, NodeType, get_attr, set_attr
from chakra.ranks.agree import P2P, Agreement, CommRecord, Fill, agree

logger = logging.getLogger(__name__)

_KINDS = {
    NodeType.COMM_COLL_NODE: "collective",
    NodeType.COMM_SEND_NODE: P2P,
    NodeType.COMM_RECV_NODE: P2P,
}


def record_of(node: Any) -> Any:
    """The :class:`CommRecord` of a communication node, else None."""
    kind = _KINDS.get(node.type)
    if kind is None:
        return None
    pg = get_attr(node, "pg_name")
    comm_type = get_attr(node, "comm_type")
    size = get_attr(node, "comm_size")
    pg_size = get_attr(node, "pg_size")
    stream = get_attr(node, "stream")
    ranks = get_attr(node, "pg_ranks")
    on_gpu = not get_attr(node, "is_cpu_op", False) and stream is not None
    return CommRecord(
        node.id,
        node.name,
        kind,
        int(comm_type) if kind != P2P and isinstance(comm_type, int) else None,
        size if isinstance(size, int) else 0,
        pg if isinstance(pg, str) and pg else None,
        pg_size if isinstance(pg_size, int) and pg_size > 0 else None,
        bool(get_attr(node, "comm_type_guessed", False)),
        (int(get_attr(node, "device", 0) or 0), int(stream)) if on_gpu else None,
        tuple(ranks) if isinstance(ranks, list) and ranks else None,
        get_attr(node, "comm_src") is not None and get_attr(node, "comm_dst") is not None,
        None if kind != P2P else node.type == NodeType.COMM_SEND_NODE,
    )


def recording(nodes: Iterable[Any], records: list[CommRecord]) -> Iterator[Any]:
    """``nodes`` unchanged, appending each communication node's record to ``records``."""
    for node in nodes:
        record = record_of(node)
        if record is not None:
            records.append(record)
        yield node


def comm_records(path: PathLike) -> list[CommRecord]:
    """The communication nodes of one ``.et`` file, in file order (one pass, streamed)."""
    with EtReader(path) as reader:
        return [r for r in map(record_of, reader) if r is not None]


def agree_files(paths: Sequence[PathLike]) -> Agreement:
    """:func:`agree` over the files (rank = position: give them in rank order,
    :func:`chakra.simulate.rank_order.files_in_rank_order`), logging what it filled and found."""
    agreement = agree(read_every_input(paths, comm_records))
    log(agreement)
    return agreement


def require_ends(paths: Sequence[PathLike], agreement: Agreement) -> None:
    """Raise :class:`~chakra.errors.ChakraError` naming the first file with a send/recv whose
    peer rank no file tells: ASTRA-sim needs both ends, so no valid ``.et`` can be written."""
    for rank, node_ids in sorted(agreement.unpaired.items()):
        raise ChakraError(
            f"{paths[rank]}: node {node_ids[0]} ({len(node_ids)} send/recv in all): the peer "
            "rank is unknown (no rank given shares its process group, and the trace's "
            "process_group:init table does not name the pair), so no valid .et can be written"
        )


def log(agreement: Agreement) -> None:
    for what, count in sorted(agreement.counts.items()):
        logger.warning("ranks: %d x %s", count, what)
    for note in agreement.notes:
        logger.warning("ranks: %s", note)
    for disagreement in agreement.disagreements:
        logger.warning("ranks disagree: %s", disagreement.message())


def patched(nodes: Iterable[Any], fills: Mapping[int, Fill]) -> Iterator[Any]:
    """``nodes`` with the fills applied; a filled node gets ``comm_filled`` (what was
    filled, comma-separated) and loses ``comm_type_guessed`` once its type is filled."""
    for node in nodes:
        fill = fills.get(node.id)
        if fill is not None:
            filled = []
            if fill.pg_name is not None:
                set_attr(node, "pg_name", fill.pg_name)
                filled.append("pg_name")
            if fill.comm_type is not None:
                set_attr(node, "comm_type", fill.comm_type)
                kept = [a for a in node.attr if a.name != "comm_type_guessed"]
                del node.attr[:]
                node.attr.extend(kept)
                filled.append("comm_type")
            if fill.size is not None:
                set_attr(node, "comm_size", fill.size)
                filled.append("comm_size")
            for name in ("comm_src", "comm_dst", "comm_tag"):
                value = getattr(fill, name)
                if value is not None:
                    set_attr(node, name, value)
                    filled.append(name)
            set_attr(node, "comm_filled", ",".join(filled))
        yield node


def rewrite_files(paths: Sequence[PathLike], agreement: Agreement) -> list[int]:
    """Rewrite the files of the ranks that have fills (atomically); the ranks rewritten."""
    done = []
    for rank, fills in sorted(agreement.fills.items()):
        path = paths[rank]
        with EtReader(path) as reader, EtWriter(path, reader.metadata) as writer:
            writer.write_all(patched(reader, fills))  # replaced when complete: reader unharmed
        done.append(rank)
    return done
