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
but a GPU node's id. The converter's walk (:func:`~chakra.ingest.et_plus_checks.
check_parents_from`) is needed only when such an edge exists (a parent whose id is not
below its child's, or a ``ran_under``), and builds only the nodes on its way.

On a synthetic 696,000-node ET+ (no ``ran_under``) the checks take ~0.35 s, ~1% of the
link; on a 348,000-node one with ``ran_under``, ~0.2 s.
"""

from __future__ import annotations

from typing import Optional

from chakra.ingest.et_plus_checks import (
    ID_LIMIT,
    TIME_LIMIT_US,
    check_header,
    check_node_id,
    check_node_times,
    check_parents_from,
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
    _check_parents(linked)


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


def _check_parents(linked: LinkedTrace) -> None:
    """The converter's parent check (:func:`~chakra.ingest.et_plus_checks.check_parents`) of
    the written nodes: the walks start at those that may close a cycle (a ``ran_under``, or
    a parent id not below their own but for a root naming itself: in most traces, none),
    and the nodes on them are built when asked for."""
    ran_under = {op_id for op_id in linked.ran_under if op_id in linked.matches}
    starts = [*ran_under]
    for ops in (linked.host.ops, linked.replay_threads):
        starts += [op.id for op in ops if op.parent_id >= op.id and op.id not in ran_under
                   and not names_itself(op.id, op.parent_id, op.name)]  # fmt: skip
    starts += [gpu.node_id for gpu in linked.gpu_nodes
               if gpu.parent_id is not None and gpu.parent_id >= gpu.node_id]  # fmt: skip
    if starts:
        check_parents_from(linked.host.path, starts, _ParentViews(linked).get, linked.device.path)


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


class _ParentViews:
    """The written nodes by id, with what the parent check reads (id, name, ``ctrl_deps``,
    ``ran_under``), built when asked for."""

    def __init__(self, linked: LinkedTrace) -> None:
        self.host = {op.id: op for op in (*linked.host.ops, *linked.replay_threads)}
        self.gpus = {gpu.node_id: gpu for gpu in linked.gpu_nodes}
        self.ran_under = {op_id: ran_on[0] for op_id, ran_on in linked.ran_under.items()
                          if op_id in linked.matches}  # fmt: skip
        self.root_id = process_root_id(linked)

    def get(self, node_id: int) -> Optional[EtPlusNode]:
        op = self.host.get(node_id)
        if op is not None:
            return EtPlusNode(op.id, op.name, op.parent_id, ran_under=self.ran_under.get(op.id))
        gpu = self.gpus.get(node_id)
        if gpu is None:
            return None
        parent = gpu.parent_id if gpu.parent_id is not None else self.root_id
        return EtPlusNode(gpu.node_id, gpu.event.name, parent, cat=gpu.event.category)


def process_root_id(linked: LinkedTrace) -> int:
    """The id of the host ET's process root (1 when it has none): the parent the writer
    gives an orphan GPU op."""
    return next((op.id for op in linked.host.ops if op.is_process_root), 1)
