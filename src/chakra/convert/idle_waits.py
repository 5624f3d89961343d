"""Idle time that was a wait: the part of a measured gap before a top-level op that the
thread spent waiting for another thread (or the GPU) is a dependency, not a duration.

A thread that sleeps until another thread hands it work (the autograd thread between two
steps, a worker waiting for its next batch) shows a long gap before its next op. Replayed as
an ``[idle]`` node of that measured length, the gap would hold the op back by the same time
whatever the other thread does: a faster GPU or CPU could not start it earlier. So when one of
the op's dependencies was measured to end inside the gap, the idle node waits for that
dependency too and keeps only the time from its end to the op's start (the wake-up), which
is what the trace does not explain.
"""

from __future__ import annotations

from collections.abc import Mapping

from chakra.convert.et_plus_input import EtPlusNode, Number
from chakra.convert.graph import Graph, IdleNode
from chakra.ingest.device_model import CLOCK_RESOLUTION_US

#: The class under which the edges into idle nodes are counted.
IDLE_AFTER_WAIT = "idle_after_wait"


def idle_after_waits(
    idle: list[IdleNode],
    graph: Graph,
    by_id: Mapping[int, EtPlusNode],
    measured_end: Mapping[int, Number],
) -> list[IdleNode]:
    """The idle nodes with each wait inside a gap made an edge: an idle node before op X
    whose other dependencies include some measured to end within X's gap gets an edge from
    each of those and keeps the time from the latest of their ends to X's start. Adds the
    edges to ``graph`` (class ``idle_after_wait``); returns the idle nodes, changed or not, in
    the same order. Linear in the idle nodes and their ops' dependencies."""
    out = []
    for gap in idle:
        op = by_id[gap.before]
        if op.ts is None or not gap.duration_us:
            out.append(gap)
            continue
        gap_start = op.ts - gap.duration_us
        inside = [
            (measured_end[src], src)
            for src in graph.deps.get(op.id, ())
            if src != gap.node_id
            and src in measured_end
            and gap_start + CLOCK_RESOLUTION_US < measured_end[src] <= op.ts + CLOCK_RESOLUTION_US
        ]
        if not inside:
            out.append(gap)
            continue
        for _, src in sorted(inside):
            graph.add(src, gap.node_id, IDLE_AFTER_WAIT)
        latest = max(end for end, _ in inside)
        out.append(IdleNode(gap.node_id, gap.before, max(0, op.ts - latest)))
    return out
