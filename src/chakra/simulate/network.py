"""An alpha-beta network model for what-if runs: a collective's time from its type, size and
group size instead of its recorded duration.

``time = steps * latency + wire_bytes / bandwidth``, with, for a group of ``n`` ranks and a
message of ``s`` bytes (ring: each rank talks to a neighbour; switch: to everyone at once):

| collective | ring steps, wire bytes | switch steps, wire bytes |
|---|---|---|
| all_reduce | 2(n-1), 2(n-1)/n s | 2, 2(n-1)/n s |
| all_gather, reduce_scatter, all_to_all | n-1, (n-1)/n s | 1, (n-1)/n s |
| broadcast, reduce, gather, scatter | n-1, s | 1, s |
| barrier | n-1, 0 | 1, 0 |
| send / recv | 1, s | 1, s |
"""

from __future__ import annotations

import msgspec

from chakra.errors import ChakraError
from chakra.et.schema import CollectiveCommType

C = CollectiveCommType
TOPOLOGIES = ("ring", "switch")


class NetworkModel(msgspec.Struct, frozen=True):
    """``bandwidth_gbps``: GB/s per link; ``latency_us``: per step."""

    topology: str
    bandwidth_gbps: float
    latency_us: float

    @classmethod
    def parse(cls, text: str) -> NetworkModel:
        """``ring:BANDWIDTH_GBPS:LATENCY_US`` or ``switch:...``, e.g. ``ring:100:5``."""
        parts = text.split(":")
        try:
            topology, bandwidth, latency = parts[0], float(parts[1]), float(parts[2])
        except (IndexError, ValueError):
            topology, bandwidth, latency = "", 0.0, -1.0
        if len(parts) != 3 or topology not in TOPOLOGIES or bandwidth <= 0 or latency < 0:
            raise ChakraError(
                f"--network {text!r}: expected ring|switch:BANDWIDTH_GBPS:LATENCY_US, "
                "e.g. ring:100:5"
            )
        return cls(topology, bandwidth, latency)

    def duration_us(self, comm_type: int, size_bytes: int, ranks: int) -> float:
        """Time of one collective (``comm_type`` -1 for send/recv)."""
        n = max(ranks, 1)
        ring = self.topology == "ring"
        if comm_type == C.ALL_REDUCE:
            steps, wire = (2 * (n - 1) if ring else 2), 2 * (n - 1) / n * size_bytes
        elif comm_type in (C.ALL_GATHER, C.REDUCE_SCATTER, C.REDUCE_SCATTER_BLOCK, C.ALL_TO_ALL):
            steps, wire = (n - 1 if ring else 1), (n - 1) / n * size_bytes
        elif comm_type == C.BARRIER:
            steps, wire = (n - 1 if ring else 1), 0.0
        elif comm_type < 0:
            steps, wire = 1, float(size_bytes)
        else:  # broadcast, reduce, gather, scatter
            steps, wire = (n - 1 if ring else 1), float(size_bytes)
        if n == 1 and comm_type >= 0:
            return 0.0
        return steps * self.latency_us + wire / (self.bandwidth_gbps * 1e3)  # bytes/us
