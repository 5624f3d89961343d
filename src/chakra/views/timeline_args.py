"""What a timeline slice of an op says about it (:mod:`chakra.views.timeline`): the
``args`` Perfetto shows when the slice is selected.

On the simulated process only (the measured process's slices carry ``node_id`` alone, so
that the file stays small), an op's slice carries, beside ``node_id``:

- ``stream``: a GPU op's stream id (a host op's thread is its track's name),
- ``shapes``: its input shapes as the ET records them (JSON text), when one of them has a
  dimension and the graph's file is a Chakra ET (read again for them: about 2 ms per 1,000
  nodes; an ET+ JSON file would be converted again, so its ops go without),
- ``sim_us`` and ``meas_us``: its simulated and measured (recorded, before any what-if
  factor) durations, summed over the segments of its own time, in µs to the nanosecond,
- ``in`` and ``out``: how many dependencies it has and how many nodes depend on it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Optional

from chakra.errors import ChakraError
from chakra.ingest.detect import TraceKind, sniff_kind
from chakra.simulate.node_files import read_nodes
from chakra.simulate.selection import with_input_shapes
from chakra.simulate.sim_graph import NO_RESOURCE, SimGraph

log = logging.getLogger(__name__)


def input_shapes(graph: SimGraph) -> Optional[list[str]]:
    """Each node's input shapes text: the graph's own, or read again from its Chakra ET
    file; None when the graph was built in memory or from an ET+ JSON file, or its file
    cannot be read or no longer matches it."""
    if graph.input_shapes is not None or not graph.source:
        return graph.input_shapes
    try:
        if sniff_kind(graph.source) is not TraceKind.CHAKRA_ET:
            return None
        shaped = read_nodes(
            graph.source, graph.rank, lambda nodes, _: with_input_shapes(graph, nodes)
        )
    except (ChakraError, OSError) as exc:
        log.debug("timeline without input shapes for %s: %s", graph.where(), exc)
        return None
    return shaped.input_shapes


class OpFacts:
    """What the slices of one rank's simulated process say about their ops."""

    def __init__(self, graph: SimGraph, start_us: Sequence[float], end_us: Sequence[float]):
        self.graph = graph
        self.start_us = start_us
        self.end_us = end_us
        self.shapes = input_shapes(graph)
        #: each resource slot's stream id, None for a thread (looked up once per rank)
        self._stream_of = [res.number if res.is_stream else None for res in graph.resources]

    def args(self, node: int, members: Sequence[int]) -> dict[str, Any]:
        """The ``args`` of the slice of op ``node`` that stands for ``members`` (itself
        and its later segments; empty: itself), ``node_id`` first."""
        graph = self.graph
        out: dict[str, Any] = {"node_id": graph.ids[node]}
        slot = graph.resource[node]
        if slot != NO_RESOURCE:
            stream = self._stream_of[slot]
            if stream is not None:
                out["stream"] = stream
        if self.shapes is not None and self.shapes[node].strip("[], "):  # a dimension
            out["shapes"] = self.shapes[node]
        start_us, end_us = self.start_us, self.end_us
        if len(members) <= 1:  # one node: 0 + x is what sum() of one term gives
            one = members[0] if members else node
            out["sim_us"] = round(0 + (end_us[one] - start_us[one]), 3)
            out["meas_us"] = round(0 + self._measured_us(one), 3)
        else:
            out["sim_us"] = _us(sum(end_us[m] - start_us[m] for m in members))
            out["meas_us"] = _us(sum(self._measured_us(m) for m in members))
        pred_start, succ_start = graph.pred_start, graph.succ_start
        out["in"] = pred_start[node + 1] - pred_start[node]
        out["out"] = succ_start[node + 1] - succ_start[node]
        return out

    def _measured_us(self, node: int) -> float:
        factors = self.graph.duration_factor
        duration = self.graph.duration_us[node]
        if factors is not None and factors[node]:
            duration /= factors[node]
        return duration


def _us(value: float) -> float:
    """µs to the nanosecond (3 decimals), as the slices' times are."""
    return round(value, 3)
