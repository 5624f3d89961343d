"""Files shaped like ASTRA-sim's own custom-collective example
(``examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce.<r>.et``
in astra-sim/astra-sim), made here: a ring all-reduce built from sends and receives.

The shape, as that example has it: per rank one chain of 35 nodes, each depending on the one
before; 2(n-1) rounds of "send the next chunk to rank r+1, receive one from rank r-1", the
first n-1 receives each followed by a COMP node (the reduction). No node carries
``is_cpu_op``; a send names only its destination (``comm_dst``), a receive only its source
(``comm_src``); every send and receive carries ``comm_type``, ``comm_size`` (1 MiB / n) and
``comm_tag`` (here the round, the same at both ends of a message); the COMP nodes carry no
attribute at all, only ``duration_micros``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chakra.et import CollectiveCommType, EtWriter, GlobalMetadata, Node, NodeType, set_attr

NPUS = 8
CHUNK_BYTES = (1 << 20) // NPUS
REDUCE_US = 2


def ring_allreduce_nodes(rank: int, npus: int = NPUS, reduce_us: int = REDUCE_US) -> list[Any]:
    """The chain of rank ``rank``: 4(n-1) sends and receives and n-1 COMP nodes."""
    nodes: list[Any] = []

    def chain(node: Any) -> None:
        if nodes:
            node.data_deps.append(nodes[-1].id)
        nodes.append(node)

    for step in range(4 * (npus - 1)):
        round_no, receiving = divmod(step, 2)
        kind = NodeType.COMM_RECV_NODE if receiving else NodeType.COMM_SEND_NODE
        message = Node(id=len(nodes), name=f"{kind.name}_tb0_step{step}", type=kind)
        set_attr(message, "comm_type", CollectiveCommType.ALL_REDUCE)
        set_attr(message, "comm_size", CHUNK_BYTES)
        if receiving:
            set_attr(message, "comm_src", (rank - 1) % npus)
        else:
            set_attr(message, "comm_dst", (rank + 1) % npus)
        set_attr(message, "comm_tag", round_no)
        chain(message)
        if receiving and round_no < npus - 1:
            chain(Node(id=len(nodes), name=f"COMP_NODE_tb0_step{step}",
                       type=NodeType.COMP_NODE, duration_micros=reduce_us))  # fmt: skip
    return nodes


def write_ring_allreduce(folder: Path, npus: int = NPUS) -> list[Path]:
    """``folder/custom_allreduce.<r>.et`` for each rank, in rank order."""
    paths = []
    for rank in range(npus):
        path = folder / f"custom_allreduce.{rank}.et"
        with EtWriter(path, GlobalMetadata(version="0.0.4")) as writer:
            writer.write_all(ring_allreduce_nodes(rank, npus))
        paths.append(path)
    return paths
