"""After a run: the critical path, what-if duration scaling, and reference-style log lines."""

from __future__ import annotations

import fnmatch
import logging
from collections import Counter
from typing import Optional

import msgspec

from chakra.errors import ChakraError
from chakra.simulate.engine import Engine
from chakra.simulate.model import NO_RESOURCE, SimGraph

logger = logging.getLogger("chakra.simulate.trace")
#: Node classes ``--scale`` understands besides name patterns.
CLASSES = ("compute", "comm", "cpu", "gpu")


class ScaleRule(msgspec.Struct, frozen=True):
    """Multiply the duration of matching nodes by ``factor``. ``target`` is a class of
    :data:`CLASSES` or a shell-style pattern on node names (``nccl*``)."""

    target: str
    factor: float

    @classmethod
    def parse(cls, text: str) -> ScaleRule:
        target, sep, factor = text.rpartition("=")
        try:
            value = float(factor)
        except ValueError:
            value = -1.0
        if not sep or not target or value < 0:
            raise ChakraError(f"--scale {text!r}: expected TARGET=FACTOR, e.g. compute=0.5")
        return cls(target, value)

    def matches(self, graph: SimGraph, node: int) -> bool:
        resource = graph.resource[node]
        on_gpu = resource != NO_RESOURCE and graph.resources[resource][0] == "stream"
        is_comm = node in graph.comm
        if self.target in CLASSES:
            return {"compute": not is_comm, "comm": is_comm, "cpu": not on_gpu,
                    "gpu": on_gpu}[self.target]  # fmt: skip
        return fnmatch.fnmatchcase(graph.names[node], self.target)


def scale_durations(graph: SimGraph, rules: list[ScaleRule]) -> int:
    """Apply every matching rule to each node's duration (in place); returns how many
    nodes changed."""
    changed = 0
    for node in range(len(graph.ids)):
        factor = 1.0
        for rule in rules:
            if rule.matches(graph, node):
                factor *= rule.factor
        if factor != 1.0:
            graph.duration_us[node] *= factor
            changed += 1
    return changed


def critical_path(engine: Engine, rank: int = 0, top: int = 5) -> list[tuple[str, float]]:
    """Names on the chain of binding constraints that ends at the last node to finish,
    with their summed durations, largest first. At each step the binding predecessor is
    the dependency or the resource's previous node whose end equals this node's start."""
    graph, start, end = engine.graphs[rank], engine.start[rank], engine.end[rank]
    if not len(graph.ids):
        return []
    previous_on_resource: dict[int, int] = {}
    by_resource: dict[int, list[int]] = {}
    for node, resource in enumerate(graph.resource):
        if resource != NO_RESOURCE:
            by_resource.setdefault(resource, []).append(node)
    for nodes in by_resource.values():
        nodes.sort(key=lambda n: (start[n], end[n]))
        previous_on_resource.update(zip(nodes[1:], nodes))
    node: Optional[int] = max(range(len(end)), key=end.__getitem__)
    totals: Counter[str] = Counter()
    seen = set()
    while node is not None and node not in seen:
        seen.add(node)
        totals[graph.names[node]] += end[node] - start[node]
        candidates = [graph.preds[k] for k in range(graph.pred_start[node],
                                                    graph.pred_start[node + 1])]  # fmt: skip
        if node in previous_on_resource:
            candidates.append(previous_on_resource[node])
        node = next((c for c in candidates if abs(end[c] - start[node]) < 1e-9), None)
    return totals.most_common(top)


def log_reference_lines(engine: Engine) -> None:
    """The reference simulator's issue/complete lines, at DEBUG (off unless asked for), so
    that existing log scrapers keep working. Written after the run, not in its hot loop."""
    if not logger.isEnabledFor(logging.DEBUG):
        return
    for r, graph in enumerate(engine.graphs):
        start, end = engine.start[r], engine.end[r]
        for node in sorted(range(len(graph.ids)), key=lambda n: (start[n], graph.ids[n])):
            resource = graph.resource[node]
            key = graph.resources[resource] if resource != NO_RESOURCE else ("thread", None)
            node_id, name = graph.ids[node], graph.names[node]
            duration = end[node] - start[node]
            if key[0] == "stream":
                logger.debug("Issuing GPU Node ID %d (%s) at %dus on stream %s with duration "
                             "%dus, tid: stream %s", node_id, name, start[node], key[2],
                             duration, key[2])  # fmt: skip
                logger.debug("GPU Node ID %d on stream %s completed at %dus, tid: stream %s",
                             node_id, key[2], end[node], key[2])  # fmt: skip
            else:
                logger.debug("Issuing CPU Node ID %d (%s) at %dus with duration %dus, tid: %s",
                             node_id, name, start[node], duration, key[1])  # fmt: skip
                logger.debug("CPU Node ID %d completed at %dus, tid: %s", node_id, end[node],
                             key[1])  # fmt: skip
