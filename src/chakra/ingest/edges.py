"""Dependency evidence between trace nodes: what the linker finds and ET+ records in
``chakra_link.dependencies`` (docs/formats.md), one model for the writer and the reader."""

from __future__ import annotations

import enum
from typing import Optional, Union

import msgspec
from msgspec import field

Number = Union[int, float]


class EdgeKind(str, enum.Enum):
    """Kinds of dependency evidence recorded in ET+ (see docs/design.md, "Linking")."""

    LAUNCH = "launch"  # host op -> GPU op it launched
    STREAM_ORDER = "stream_order"  # GPU op -> next GPU op on the same stream
    EVENT_WAIT = "event_wait"  # GPU op before cudaEventRecord -> first op after the wait
    HOST_SYNC = "host_sync"  # GPU op -> the host op that could only run after it ended
    INTER_THREAD = "inter_thread"  # host op on one thread -> host op it let run on another


#: ``via`` of an inferred edge into an op's last stretch of own time (after its last child),
#: not its start (:mod:`chakra.link.inferred`; the converter waits there).
TAIL_WAIT = "inferred:tail_wait"
#: ``via`` of an inferred edge from a collective whose work completed (at ``via_ts``) before
#: its record function closed: the converter cuts the collective there and meets there.
EARLY_END = "inferred:early_end"


class Edge(msgspec.Struct, frozen=True, gc=False):
    """One dependency: ``dst`` may not start before ``src`` ends. Endpoints are ET+ node
    ids; ``dst`` is None when nothing recorded follows (e.g. a final synchronize). The
    ``via_*`` fields name the runtime call that carries the dependency: its API, its
    correlation, its start and end (host_sync) and the innermost host op enclosing it. In
    JSON the fields keep ET+'s names (``via``, ``via_ts``, ``via_end``), in this order."""

    kind: EdgeKind
    src: int
    dst: Optional[int] = None
    via_api: Optional[str] = field(default=None, name="via")
    via_correlation: Optional[int] = None
    via_ts_us: Optional[Number] = field(default=None, name="via_ts")
    via_end_us: Optional[Number] = field(default=None, name="via_end")
    via_host: Optional[int] = None
