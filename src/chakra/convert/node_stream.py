"""The serialized nodes of a conversion in file order, from any position, and their writing
by one process or two.

A conversion's nodes come in sections: the ET+ nodes in id order (an outline trace's
payloads read again from the file, one at a time), the later segments of host ops, the idle
nodes, the delay nodes and the ``[end]`` node. :func:`serialized_nodes` builds those of
positions ``first`` to ``last`` only: a section before ``first`` is skipped whole, and the
payload lines before ``first`` are passed over without being decoded.

Building the nodes is about half of a conversion's time. With two processes,
:func:`write_nodes` has a forked worker (:func:`chakra.workers.forked`) build the second
half into a scratch file while this process builds and writes the first, then appends the
worker's bytes: the same file, in about half the time on two cores.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any, Optional

from chakra.convert.et_plus_input import EtPlusTrace, with_payloads
from chakra.convert.nodes import build_node, delay_node, end_node, idle_node, segment_node
from chakra.errors import PathLike
from chakra.et.framing import encode_varint
from chakra.et.writer import EtWriter, check_serialized, write_et
from chakra.fileio import AtomicGroup
from chakra.progress import tracked
from chakra.workers import forked

#: Of the nodes, the share the first process builds when two do (the ET+ nodes, first in
#: the file, cost more each than the segments, idle and delay nodes after them).
FIRST_SHARE = 0.35

_Section = tuple[int, Callable[[int], Iterator[bytes]]]


def node_count(trace: EtPlusTrace, plan: Any) -> int:
    """How many nodes :func:`serialized_nodes` builds in all."""
    return sum(count for count, _ in _sections(trace, plan))


def serialized_nodes(
    trace: EtPlusTrace, plan: Any, first: int = 0, last: Optional[int] = None
) -> Iterator[bytes]:
    """The serialized nodes at positions ``first`` to ``last`` (None: the end) of the file,
    built one at a time. ``plan``: the converter's plan of ``trace``."""
    position = 0
    for count, section in _sections(trace, plan):
        if last is not None and position >= last:
            return
        if position + count > first:
            start = max(first - position, 0)
            built = section(start)
            if last is None or position + count <= last:
                yield from built  # to its end, where the outline's re-read checks the file
            else:
                try:
                    yield from islice(built, last - position - start)
                finally:
                    built.close()  # type: ignore[attr-defined]
        position += count


def write_nodes(path: PathLike, metadata: Any, trace: EtPlusTrace, plan: Any,
                group: Optional[AtomicGroup] = None, processes: int = 1) -> int:  # fmt: skip
    """Write ``metadata`` and every node to ``path`` (atomically; with a ``group``, when the
    group commits), built by ``processes`` processes (1 or 2); the node count."""
    total = node_count(trace, plan)
    if processes < 2 or total < 2:
        nodes = tracked(serialized_nodes(trace, plan), total, f"writing {path}", unit="nodes")
        return write_et(path, metadata, nodes, group)
    split = max(1, int(total * FIRST_SHARE))
    with tempfile.TemporaryDirectory(prefix="chakra-nodes-") as scratch:
        later = Path(scratch) / "later.nodes"

        def work() -> int:  # in the forked process
            return _framed_into(later, serialized_nodes(trace, plan, split), path, split)

        with EtWriter(path, metadata, group) as writer, forked(work) as future:
            first = serialized_nodes(trace, plan, 0, split)
            writer.write_all(tracked(first, split, f"writing {path}", unit="nodes"))
            count = future.result()
            with later.open("rb") as framed:
                writer.append_framed(framed, count)
            return writer.nodes_written


def _framed_into(target: Path, nodes: Iterator[bytes], path: PathLike, offset: int) -> int:
    """``nodes`` written to ``target`` as a ``.et`` frames them (each checked as
    :class:`~chakra.et.writer.EtWriter` checks it: ``offset`` nodes come before them in
    ``path``); how many."""
    count = 0
    with target.open("wb") as out:
        for count, body in enumerate(nodes, 1):
            check_serialized(path, body, offset + count)
            out.write(encode_varint(len(body)))
            out.write(body)
    return count


def _sections(trace: EtPlusTrace, plan: Any) -> list[_Section]:
    """Each section of the file's nodes: its count, and its nodes from a position on."""
    by_id, deps, parents = plan.by_id, plan.deps, plan.parents

    def ops(start: int) -> Iterator[bytes]:
        if trace.outline:
            nodes: Iterator[tuple[Any, Any]] = with_payloads(trace, skip=start)
        else:  # a whole node is its own payload
            nodes = ((by_id[i], by_id[i]) for i in sorted(by_id)[start:])
        for node, payload in nodes:
            node_id = node.id
            own = plan.segments.anchored(node_id)
            yield build_node(node, plan.kinds[node_id], sorted(deps.get(node_id, ())),
                             parents.get(node_id),
                             None if own is None else own.end - own.start, payload,
                             holds_thread=node_id not in plan.segments.detached,
                             start_us=None if own is None else own.start)  # fmt: skip

    def segments(start: int) -> Iterator[bytes]:
        for segment in plan.segments.extra[start:]:
            yield segment_node(segment, by_id[segment.op_id],
                               sorted(deps.get(segment.node_id, ())),
                               parents.get(segment.node_id))  # fmt: skip

    def idle(start: int) -> Iterator[bytes]:
        for gap in plan.idle[start:]:
            node_deps = sorted(deps.get(gap.node_id, ()))
            yield idle_node(gap.node_id, by_id[gap.before], gap.duration_us, node_deps,
                            parents.get(gap.node_id))  # fmt: skip

    def delays(start: int) -> Iterator[bytes]:
        befores = {delay.before for delay in plan.delays if delay.before not in by_id}
        op_of = {s.node_id: s.op_id for s in plan.segments.extra if s.node_id in befores}
        for delay in plan.delays[start:]:  # before an op, or before a later segment of one
            before = by_id[op_of.get(delay.before, delay.before)]
            yield delay_node(delay, before, sorted(deps.get(delay.node_id, ())),
                             parents.get(delay.node_id))  # fmt: skip

    def end(start: int) -> Iterator[bytes]:
        if start == 0 and plan.end is not None:
            yield end_node(*plan.end)

    main = len(trace.nodes) if trace.outline else len(by_id)
    return [
        (main, ops), (len(plan.segments.extra), segments), (len(plan.idle), idle),
        (len(plan.delays), delays), (0 if plan.end is None else 1, end),
    ]  # fmt: skip
