"""After a run: the critical path, what the graph explains (a model-only run), what-if
duration scaling, and reference-style log lines."""

from __future__ import annotations

import logging
import math
from array import array
from collections import Counter
from collections.abc import Sequence
from typing import Optional

import msgspec
import numpy as np

from chakra.errors import ChakraError, ScaleRuleError
from chakra.ingest.name_patterns import has_wildcard, matching_names
from chakra.simulate.selection import QUALIFIER, Qualifiers, class_mask, with_instance_facts
from chakra.simulate.sim_graph import NO_RESOURCE, SimGraph
from chakra.simulate.sim_result import PathEntry, SimResult
from chakra.simulate.times import rerun

logger = logging.getLogger("chakra.simulate.trace")
#: Names of the nodes the converter adds for measured time the graph does not explain: a
#: ``[delay]`` (launch latency, a thread waking up; no resource) and an ``[idle]`` gap on a
#: thread.
DELAY, IDLE = "[delay]", "[idle]"
_UNEXPLAINED = frozenset((DELAY, IDLE))
#: Node classes ``--scale`` understands besides names and name patterns. The first four
#: are op classes and leave ``[delay]`` and ``[idle]`` nodes alone; ``delay`` and ``idle``
#: are those nodes.
CLASSES = ("compute", "comm", "cpu", "gpu", "delay", "idle")


def unexplained_nodes(graph: SimGraph) -> np.ndarray:
    """Boolean mask of the ``[delay]`` and ``[idle]`` nodes, found by name."""
    names = graph.names
    return np.fromiter(map(_UNEXPLAINED.__contains__, names), bool, len(names))


class ScaleRule(msgspec.Struct, frozen=True):
    """Multiply the duration of matching nodes by ``factor`` (0: the nodes take no time).
    ``target``: a class of :data:`CLASSES`; ``name:TEXT``, the nodes named exactly TEXT;
    or a shell-style pattern on node names (``nccl*``), in which ``[`` and ``]`` stand for
    themselves (``[delay]`` is the delay nodes, not a character class). ``[delay]`` and
    ``[idle]`` nodes keep their time unless the target is their class or their exact name
    (no op class or wildcard pattern reaches them). ``where``: the qualifiers that narrow
    the target to some instances (``aten::addmm@shape:[8,16]@scope:*layers.1*@rank:0``;
    :mod:`chakra.simulate.selection`), None for none. ``text`` is the rule as given."""

    target: str
    factor: float
    text: str = ""
    where: Optional[Qualifiers] = None

    @classmethod
    def parse(cls, text: str) -> ScaleRule:
        """``TARGET[@QUALIFIER...]=FACTOR``. Raises ScaleRuleError (one line, naming
        ``text``) when it does not parse."""
        target, sep, factor = text.rpartition("=")
        if not sep or not target or target == "name:":
            raise ScaleRuleError(f"--scale {text}: expected TARGET=FACTOR, e.g. compute=0.5")
        try:
            value = float(factor)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise ScaleRuleError(f"--scale {text}: factor must be a number, e.g. compute=0.5")
        if value < 0:
            raise ScaleRuleError(f"--scale {text}: factor must not be negative")
        target, *qualifiers = QUALIFIER.split(target)
        if not qualifiers:
            return cls(target, value, text)
        target = target.strip()
        if not target or target == "name:":
            raise ScaleRuleError(
                f"--scale {text}: a qualifier narrows a TARGET, e.g. aten::addmm@rank:0=2 "
                "(* for every op)"
            )
        try:
            where = Qualifiers.parse(qualifiers)
        except ScaleRuleError as exc:
            raise ScaleRuleError(f"--scale {text}: {exc}") from None
        return cls(target, value, text, where)

    def mask(self, graph: SimGraph) -> np.ndarray:
        """Boolean mask of the nodes of ``graph`` this rule scales (its qualifiers may read
        the graph's file again: see :func:`scaled_graphs`)."""
        mask = self._target_mask(graph)
        return mask if self.where is None else self.where.narrow(graph, mask)

    def _target_mask(self, graph: SimGraph) -> np.ndarray:
        if self.target in CLASSES:
            return _class_mask(graph, self.target)
        if self.target.startswith("name:"):
            name = self.target[len("name:") :]
            return np.fromiter((n == name for n in graph.names), bool, len(graph.names))
        hits = matching_names(self.target, graph.names)
        if has_wildcard(self.target):
            hits -= {DELAY, IDLE}
        return np.fromiter((n in hits for n in graph.names), bool, len(graph.names))


def _class_mask(graph: SimGraph, target: str) -> np.ndarray:
    unexplained = unexplained_nodes(graph)
    if target in ("delay", "idle"):
        name = DELAY if target == "delay" else IDLE
        return np.fromiter((n == name for n in graph.names), bool, len(graph.names))
    return class_mask(graph, target) & ~unexplained


def scaled_graphs(
    graphs: Sequence[SimGraph], rules: Sequence[ScaleRule]
) -> tuple[list[SimGraph], list[int]]:
    """Copies of ``graphs`` with every matching rule applied to each node's duration (the
    factors of several rules multiply), and how many nodes (all ranks) each rule matched.
    A copy keeps the input shapes its rules' qualifiers read (one more pass over its file).
    Raises ChakraError naming the first rule that matches no node in any rank."""
    counts = [0] * len(rules)
    out = []
    for graph in graphs:
        graph = with_instance_facts(graph, [rule.where for rule in rules])
        factors = np.ones(len(graph.ids))
        for k, rule in enumerate(rules):
            mask = rule.mask(graph)
            counts[k] += int(mask.sum())
            factors[mask] *= rule.factor
        durations = np.frombuffer(graph.duration_us, dtype=np.float64) * factors
        if graph.duration_factor is not None:  # a copy scaled before: the factors multiply
            factors *= np.frombuffer(graph.duration_factor, dtype=np.float64)
        scaled = array("d", durations.tobytes())
        out.append(
            msgspec.structs.replace(
                graph, duration_us=scaled, duration_factor=array("d", factors.tobytes())
            )
        )
    for rule, count in zip(rules, counts):
        if not count:
            raise ChakraError(f"--scale {rule.text or rule.target}: matches no node")
    return out, counts


def model_only(result: SimResult, masks: Optional[Sequence[np.ndarray]] = None) -> SimResult:
    """A second run of ``result``'s graphs (copies) with every ``[delay]`` and ``[idle]``
    node taking no time: the makespan the graph's own ops and dependencies explain. Same
    network model and take order (it does not depend on durations); costs one more run,
    except when no rank has such a node: the run would be ``result``'s, which is returned.
    ``masks``: each rank's :func:`unexplained_nodes`, when the caller has them."""
    if masks is None:
        masks = [unexplained_nodes(graph) for graph in result.graphs]
    if not any(mask.any() for mask in masks):
        return result
    graphs = []
    for graph, mask in zip(result.graphs, masks):
        durations = np.frombuffer(graph.duration_us, dtype=np.float64).copy()
        durations[mask] = 0.0
        graphs.append(msgspec.structs.replace(graph, duration_us=array("d", durations.tobytes())))
    return rerun(result, graphs, "model only")


def critical_chain(result: SimResult, rank: int = 0) -> list[int]:
    """Node positions on the chain of binding constraints that ends at the last node to
    finish, last first. At each step the binding predecessor is the dependency (first in
    ``data_deps`` order) or else the resource's previous node whose end equals this node's
    start. Array sorts and each node's binding predecessor found for all nodes at once,
    then one step per chain node."""
    graph, start, end = result.graphs[rank], result.start[rank], result.end[rank]
    count = len(graph.ids)
    if not count:
        return []
    starts = np.frombuffer(start, dtype=np.float64)
    ends = np.frombuffer(end, dtype=np.float64)
    resource = np.frombuffer(graph.resource, dtype=np.int64)
    held = np.flatnonzero(resource != NO_RESOURCE)
    order = held[np.lexsort((ends[held], starts[held], resource[held]))]  # stable: by index
    previous = np.full(count, -1, dtype=np.int64)
    same = resource[order[1:]] == resource[order[:-1]]
    previous[order[1:][same]] = order[:-1][same]
    binding = _binding_dependency(graph, starts, ends)
    before = ends[np.maximum(previous, 0)]
    on_resource = (previous >= 0) & (np.abs(before - starts) < 1e-9)
    binding = np.where(binding >= 0, binding, np.where(on_resource, previous, -1)).tolist()
    return _follow(binding, int(np.argmax(ends)))


def _follow(binding: list[int], first: int) -> list[int]:
    """``first``, ``binding[first]``, ... up to a -1 or a node met before (not repeated).
    A chain without a loop takes at most one step per node: the walk keeps a set of the
    nodes met only when it goes on longer than that."""
    chain, node, limit = [], first, len(binding)
    while node >= 0 and len(chain) <= limit:
        chain.append(node)
        node = binding[node]
    if len(chain) <= limit:
        return chain
    chain, node, seen = [], first, set()
    while node >= 0 and node not in seen:
        seen.add(node)
        chain.append(node)
        node = binding[node]
    return chain


def _binding_dependency(graph: SimGraph, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Each node's first dependency (``preds`` order) that ends when it starts (within
    1e-9 µs), -1 for none."""
    count = len(graph.ids)
    preds = np.asarray(graph.preds, dtype=np.int64)
    pred_start = np.asarray(graph.pred_start, dtype=np.int64)
    owners = np.repeat(np.arange(count, dtype=np.int64), np.diff(pred_start))
    hits = np.flatnonzero(np.abs(ends[preds] - starts[owners]) < 1e-9)
    first = np.full(count, -1, dtype=np.int64)
    if hits.size:
        hit_owners = owners[hits]  # ascending: a node's edges are together, in order
        leading = np.concatenate(([True], hit_owners[1:] != hit_owners[:-1]))
        first[hit_owners[leading]] = preds[hits[leading]]
    return first


def critical_path(result: SimResult, rank: int = 0, top: int = 5) -> list[PathEntry]:
    """Names on :func:`critical_chain` with their summed durations, largest first."""
    names = result.graphs[rank].names
    chain = critical_chain(result, rank)
    starts = np.frombuffer(result.start[rank], dtype=np.float64)
    ends = np.frombuffer(result.end[rank], dtype=np.float64)
    codes: dict[str, int] = {}  # in first appearance along the chain, as a Counter's keys
    numbered = [codes.setdefault(names[node], len(codes)) for node in chain]
    # summed in chain order, as adding each node's time to a Counter would
    spans = ends[chain] - starts[chain]
    sums = np.bincount(np.asarray(numbered, dtype=np.int64), spans, minlength=len(codes))
    totals = Counter(dict(zip(codes, sums.astype(np.float64).tolist())))
    return [PathEntry(name, total) for name, total in totals.most_common(top)]


def unexplained_on_path(result: SimResult, rank: int = 0) -> float:
    """Total time (µs) of the ``[delay]`` and ``[idle]`` nodes on :func:`critical_chain`:
    how much of the replayed makespan the graph's ops do not explain."""
    return sum(unexplained_by_kind(result, rank))


def unexplained_by_kind(result: SimResult, rank: int = 0) -> tuple[float, float]:
    """(``[delay]``, ``[idle]``) time (µs) on :func:`critical_chain`, one walk."""
    start, end, names = result.start[rank], result.end[rank], result.graphs[rank].names
    delay = idle = 0.0
    for n in critical_chain(result, rank):
        if names[n] == DELAY:
            delay += end[n] - start[n]
        elif names[n] == IDLE:
            idle += end[n] - start[n]
    return delay, idle


def log_reference_lines(result: SimResult) -> None:
    """The reference simulator's issue/complete lines, at DEBUG (off unless asked for), so
    that existing log scrapers keep working. Written after the run, not in its hot loop."""
    if not logger.isEnabledFor(logging.DEBUG):
        return
    for r, graph in enumerate(result.graphs):
        start, end = result.start[r], result.end[r]
        for node in sorted(range(len(graph.ids)), key=lambda n: (start[n], graph.ids[n])):
            resource = graph.resource[node]
            held = graph.resources[resource] if resource != NO_RESOURCE else None
            node_id, name = graph.ids[node], graph.names[node]
            duration = end[node] - start[node]
            # a thread's tid, a stream's id, a slot's name (None: no resource)
            number = held.number if held is not None else None
            if held is not None and held.is_stream:
                logger.debug(
                    "Issuing GPU Node ID %d (%s) at %dus on stream %s with duration "
                    "%dus, tid: stream %s",
                    node_id,
                    name,
                    start[node],
                    number,
                    duration,
                    number,
                )
                logger.debug(
                    "GPU Node ID %d on stream %s completed at %dus, tid: stream %s",
                    node_id,
                    number,
                    end[node],
                    number,
                )
            else:
                logger.debug(
                    "Issuing CPU Node ID %d (%s) at %dus with duration %dus, tid: %s",
                    node_id,
                    name,
                    start[node],
                    duration,
                    number,
                )
                logger.debug(
                    "CPU Node ID %d completed at %dus, tid: %s", node_id, end[node], number
                )
