"""ASTRA-sim's analytical ring, as its system layer and congestion-unaware network backend time
a communication (ASTRA-sim 518bd51, astra-network-analytical 599a047, with the shipped
``configs/system.json``: ring collectives, 4 dataset splits, endpoint delay 10 ns, one active
chunk per dimension, local memory 1,600 GB/s, no shared-bus model).

A message from NPU ``a`` to ``b`` takes ``hops * latency + bytes / bandwidth``, truncated to
whole nanoseconds; ``hops`` is the shorter way round a bidirectional ring of all NPUs, and a
bandwidth of G "GB/s" is G * 2^30 bytes per 10^9 ns. A send ends when its message arrives; a
receive ends then, or when it is posted if the message came first.

A collective splits its bytes into chunks of ``size // splits`` (at least ``npus`` bytes,
except all-gather); a size that does not divide gives one more chunk of the same size. Each
member runs its chunks one after the other. A chunk is ``steps`` ring steps over the group's
members in ascending rank order (member ``i`` sends to ``i+1``, receives from ``i-1``):

| collective | steps | message bytes | steps with a local reduction |
|---|---|---|---|
| all_reduce | 2(n-1) | chunk // n | the first n-1 |
| reduce_scatter | n-1 | chunk // n | all |
| all_gather | n-1 | chunk | none |
| all_to_all | n(n-1)/2 | chunk // n | none |

A member starts a chunk ``endpoint`` ns after it starts it (a hop across its memory bus),
sends, and posts the receive of the same step; ``endpoint`` ns (plus, after a reduction
step, three local memory accesses of ``bytes // local bandwidth`` ns each) after that receive
ends, it sends the next step, or, after the last, ends the chunk. Members therefore finish
at different times when they arrive at different times. Checked against the shipped binary
on random groups, sizes, types and arrival times (``tests/simulate/test_astra_resources.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from chakra.errors import ChakraError
from chakra.et.schema import CollectiveCommType
from chakra.simulate.network import NetworkModel

C = CollectiveCommType
#: The collectives ASTRA-sim times on its network; it replays BROADCAST's recorded duration
#: and fails on the others.
RING_COLLECTIVES = frozenset({C.ALL_REDUCE, C.REDUCE_SCATTER, C.ALL_GATHER, C.ALL_TO_ALL})
#: run.py's network: ``--gbps 50 --latency-ns 500``.
DEFAULT_NETWORK = "ring:50:0.5"


class AstraRing(msgspec.Struct, frozen=True):
    """ASTRA-sim's ring of ``npus`` NPUs: ``bandwidth_gbps`` per link (ASTRA-sim's GB/s,
    2^30 bytes), ``latency_ns`` per hop; the system layer's dataset splits, endpoint delay
    and local memory bandwidth (10^9 bytes/s per "GB/s")."""

    bandwidth_gbps: float = 50.0
    latency_ns: float = 500.0
    npus: int = 1
    dataset_splits: int = 4
    endpoint_delay_ns: int = 10
    local_memory_gbps: float = 1600.0

    @classmethod
    def from_network(cls, network: NetworkModel, npus: int) -> AstraRing:
        """The ring a ``--network ring:GBPS:LATENCY_US`` describes, over ``npus`` NPUs."""
        if network.topology != "ring":
            raise ChakraError(
                f"--resources astra-sim: the network must be a ring (as run.py's), "
                f"not {network.topology}"
            )
        return cls(network.bandwidth_gbps, network.latency_us * 1000.0, max(npus, 1))

    def hops(self, source: int, destination: int) -> int:
        """Links between two NPUs, the shorter way round."""
        forward = (destination - source) % self.npus
        return min(forward, self.npus - forward)

    def message_ns(self, source: int, destination: int, size_bytes: int) -> int:
        """Time of one message (a send, a ring step), truncated to whole ns."""
        per_ns = self.bandwidth_gbps * (1 << 30) / 1e9
        return int(self.hops(source, destination) * self.latency_ns + size_bytes / per_ns)

    def collective_ends_ns(
        self,
        comm_type: int,
        size_bytes: int,
        members: Sequence[int],
        arrivals_ns: Sequence[int],
    ) -> list[int]:
        """When each member (ranks in ascending order; each arrived at ``arrivals_ns``, the
        same order) ends a ring collective. A group of one ends on arrival (ASTRA-sim never
        ends it). Cost: chunks x steps vector steps over the members, or a closed form
        when every member starts a chunk together over equal links."""
        count = len(members)
        if count < 2:
            return list(arrivals_ns)
        chunk, chunks = self._chunks(comm_type, size_bytes)
        message = chunk if comm_type == C.ALL_GATHER else chunk // count
        steps, reducing = _ring_steps(comm_type, count)
        links = np.array(
            [self.message_ns(members[i - 1], members[i], message) for i in range(count)],
            dtype=np.int64,
        )
        reduction = 3 * int(message / self.local_memory_gbps)  # GB/s of 10^9 B: bytes per ns
        after = [self.endpoint_delay_ns + (reduction if k < reducing else 0) for k in range(steps)]
        times = np.array(arrivals_ns, dtype=np.int64)
        for done in range(chunks):
            if (times == times[0]).all() and (links == links[0]).all():
                per_chunk = self.endpoint_delay_ns + steps * int(links[0]) + sum(after)
                return [int(t) + (chunks - done) * per_chunk for t in times]
            sent = times + self.endpoint_delay_ns
            for k in range(steps):
                received = np.maximum(np.roll(sent, 1) + links, sent)
                sent = received + after[k]
            times = sent
        return [int(t) for t in times]

    def _chunks(self, comm_type: int, size_bytes: int) -> tuple[int, int]:
        """Bytes per chunk and how many chunks."""
        size = max(size_bytes, 0)
        chunk = size // self.dataset_splits
        if comm_type != C.ALL_GATHER and chunk < self.npus:
            chunk, size = self.npus, self.dataset_splits * self.npus
        if chunk == 0:  # an all-gather of fewer bytes than splits: ASTRA-sim never ends it
            return 0, self.dataset_splits
        return chunk, -(-size // chunk)


def _ring_steps(comm_type: int, members: int) -> tuple[int, int]:
    """Ring steps per chunk, and how many of the first ones reduce what they receive."""
    if comm_type == C.ALL_REDUCE:
        return 2 * (members - 1), members - 1
    if comm_type == C.REDUCE_SCATTER:
        return members - 1, members - 1
    if comm_type == C.ALL_TO_ALL:
        return members * (members - 1) // 2, 0
    return members - 1, 0  # all-gather
