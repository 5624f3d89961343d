"""What the linker checks before it writes an ET+: what the converter checks when it reads
one (:mod:`chakra.ingest.et_plus_checks`), so that it never writes what the converter refuses.

The checks run on the values the writer (:mod:`chakra.link.et_plus`) puts in each node: ids,
the header's ``pid``/``start_ts``/``finish_ts``, the times of matched host ops and GPU ops
(``ts``, ``dur``, ``inclusive_dur``, ``exclusive_dur``, ``idle_gap``), and the parents
(``ctrl_deps``, ``ran_under``). Most traces pass with a few comparisons per node; a node that
fails is rebuilt as the converter would read it (:func:`host_view`, :func:`gpu_view`) and
refused by the converter's own check, in its words. The host ET's parents were checked when
it was read, but the written ones can still close a cycle: through where ops ran
(``ran_under``, from Kineto's nesting), or through a host parent id that names no host op
but a GPU node's id. Walking them is needed only when such an edge exists (a parent whose id
is not below its child's, or a ``ran_under``).
"""

from __future__ import annotations

from collections.abc import Iterator

from chakra.ingest.et_plus_checks import (
    ID_LIMIT,
    TIME_LIMIT_US,
    check_header,
    check_node_id,
    check_node_times,
    check_parents,
)
from chakra.ingest.et_plus_model import EtPlusNode
from chakra.ingest.host_model import HostOp
from chakra.ingest.parent_cycles import names_itself
from chakra.link.linked_trace import GpuNode, LinkedTrace


def check_writable(linked: LinkedTrace) -> None:
    """Raise TraceFormatError when the ET+ of ``linked`` would hold what the converter
    refuses: an id, header field or time out of range, naming the host ET (the Kineto trace
    for a GPU op's time), or a parent cycle, naming the host ET (the Kineto trace for a
    cycle that only ``ran_under`` closes)."""
    host_path = linked.host.path
    check_header(host_path, linked.host)
    _check_ids(linked)
    _check_times(linked)
    if _may_close_a_cycle(linked):
        nodes = list(_views(linked))
        check_parents(host_path, nodes, ran_under_path=linked.device.path)


def _check_ids(linked: LinkedTrace) -> None:
    """Host ops come sorted by id (HostTrace), replay thread roots and GPU ops after them."""
    ops, gpus = linked.host.ops, linked.gpu_nodes
    ids = [ops[0].id, ops[-1].id] if ops else []
    ids += [op.id for op in linked.replay_threads]
    if gpus:
        ids += [min(gpu.node_id for gpu in gpus), max(gpu.node_id for gpu in gpus)]
    if ids and not (min(ids) >= 0 and max(ids) < ID_LIMIT):
        every = [*(op.id for op in ops), *ids]
        check_node_id(linked.host.path, next(i for i in every if not 0 <= i < ID_LIMIT))


def _check_times(linked: LinkedTrace) -> None:
    """A few comparisons per node; a node out of range (maybe) is then refused by the
    converter's check of its view."""
    limit = TIME_LIMIT_US
    matches = linked.matches.values()
    if not (all(-limit < (m.event.ts_us or 0) < limit and -limit < m.event.dur_us < limit
                and -limit < m.exclusive_us < limit for m in matches)
            and all(-limit < gap < limit for gap in linked.idle_gap_us.values())):  # fmt: skip
        for op in linked.host.ops:
            if op.id in linked.matches:
                check_node_times(linked.host.path, host_view(op, linked))
    gpus = linked.gpu_nodes
    if not all(-limit < (g.event.ts_us or 0) < limit and -limit < g.event.dur_us < limit
               for g in gpus):  # fmt: skip
        for gpu in gpus:
            check_node_times(linked.device.path, gpu_view(gpu, root_id=0))


def _may_close_a_cycle(linked: LinkedTrace) -> bool:
    """Whether a written parent edge may close a cycle (see the module doc)."""
    if linked.ran_under:
        return True
    for ops in (linked.host.ops, linked.replay_threads):
        if any(op.parent_id >= op.id and not names_itself(op.id, op.parent_id, op.name)
               for op in ops):  # fmt: skip
            return True
    return any(gpu.parent_id is not None and gpu.parent_id >= gpu.node_id
               for gpu in linked.gpu_nodes)  # fmt: skip


def host_view(op: HostOp, linked: LinkedTrace) -> EtPlusNode:
    """The host op's node as the converter reads it back, but its inputs, outputs, attrs
    (what :func:`chakra.link.et_plus.host_node` writes)."""
    match = linked.matches.get(op.id)
    if match is None:
        return EtPlusNode(op.id, op.name, op.parent_id)
    ran_on = linked.ran_under.get(op.id)
    return EtPlusNode(op.id, op.name, op.parent_id, ts=match.event.ts_us,
                      inclusive_dur=match.event.dur_us, exclusive_dur=match.exclusive_us,
                      idle_gap=linked.idle_gap_us.get(op.id),
                      ran_under=None if ran_on is None else ran_on[0])  # fmt: skip


def gpu_view(gpu: GpuNode, root_id: int) -> EtPlusNode:
    """A GPU op's node as the converter reads it back (see :func:`host_view`); an orphan's
    parent is the process root ``root_id``."""
    event = gpu.event
    parent = gpu.parent_id if gpu.parent_id is not None else root_id
    return EtPlusNode(gpu.node_id, event.name, parent, ts=event.ts_us, dur=event.dur_us,
                      inclusive_dur=event.dur_us, exclusive_dur=event.dur_us,
                      cat=event.category)  # fmt: skip


def _views(linked: LinkedTrace) -> Iterator[EtPlusNode]:
    """Every node the writer writes, in its order: host ops, replay thread roots, GPU ops."""
    root_id = process_root_id(linked)
    for op in linked.host.ops:
        yield host_view(op, linked)
    for root in linked.replay_threads:
        yield EtPlusNode(root.id, root.name, root.parent_id)
    for gpu in linked.gpu_nodes:
        yield gpu_view(gpu, root_id)


def process_root_id(linked: LinkedTrace) -> int:
    """The id of the host ET's process root (1 when it has none): the parent the writer
    gives an orphan GPU op."""
    return next((op.id for op in linked.host.ops if op.is_process_root), 1)
