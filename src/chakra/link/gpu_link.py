"""Attach each GPU op (kernel, memcpy, memset) to the host op that launched it.

GPU op -> runtime/driver call with the same ``correlation`` -> innermost Kineto CPU op
enclosing that call on the calling thread -> its host op (walking up enclosing ops until
one is in the host ET). NCCL kernels attach to the enclosing ``nccl:*`` op. Without a launch
event, the GPU op's ``External id`` names its CPU op (a fallback the report counts). A GPU
op whose launch is nowhere is kept, without a parent, in its stream's order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Optional, Union

from chakra.ingest.device_model import KinetoEvent
from chakra.link.linked_trace import GpuLinkStrategy, GpuNode, LinkWindow
from chakra.link.nesting import ThreadNesting

NCCL_OP_PREFIX = "nccl:"
#: Orphan reasons (``GpuNode.orphan_reason``), each true of the GPU op it names.
NO_ENCLOSING_OP = "no CPU op encloses the launch call"
UNMATCHED_ENCLOSING_OP = "CPU ops enclosing the launch have no matched host op"
NO_LAUNCH_EVENT = "no launch event in the trace"


def is_nccl_kernel(event: KinetoEvent) -> bool:
    return "nccl" in event.name.lower()


class GpuLinker:
    """Finds parents for GPU ops; ``host_of`` maps a Kineto CPU event (by identity) to the
    host op id it was matched with; ``calls`` are the runtime calls by correlation."""

    def __init__(
        self,
        nestings: Mapping[tuple, ThreadNesting],
        host_of: Mapping[int, int],
        calls: Mapping[int, KinetoEvent],
        window: Optional[LinkWindow],
    ) -> None:
        self.nestings = nestings
        self.host_of = host_of
        self.launch_by_correlation = calls
        self.cpu_by_external_id: dict[int, KinetoEvent] = {}
        for nesting in nestings.values():
            for event in nesting.events:  # outermost first: keep the first seen
                if event.external_id is not None:
                    self.cpu_by_external_id.setdefault(event.external_id, event)
        self.window = window
        self.orphans: Counter[str] = Counter()
        self.outside_window = 0

    def link(self, gpu_ops: Sequence[KinetoEvent], first_id: int) -> tuple[GpuNode, ...]:
        """A node for every GPU op, ids from ``first_id`` in (start, stream, correlation)
        order. Ops launched outside the linked window have ``in_window`` False and no
        parent: they still order their streams while evidence is collected, then go."""
        ordered = sorted(gpu_ops, key=lambda e: (e.ts_us, e.stream or 0, e.correlation or 0))
        return tuple(self._link_one(event, first_id + i) for i, event in enumerate(ordered))

    def _in_window(self, instant: float) -> bool:
        return self.window is None or self.window.contains(instant)

    def _outside(self, node_id: int, event: KinetoEvent, launch) -> GpuNode:
        self.outside_window += 1
        return GpuNode(node_id, event, None, launch, GpuLinkStrategy.NONE, in_window=False)

    def _link_one(self, event: KinetoEvent, node_id: int) -> GpuNode:
        launch = self.launch_by_correlation.get(event.correlation)
        if launch is not None:
            if not self._in_window(launch.ts_us or 0):
                return self._outside(node_id, event, launch)
            parent = self._parent_at(launch, is_nccl_kernel(event))
            if isinstance(parent, int):
                return GpuNode(node_id, event, parent, launch, GpuLinkStrategy.CORRELATION)
            return self._orphan(node_id, event, launch, parent)
        if not self._in_window(event.ts_us or 0):
            return self._outside(node_id, event, None)
        cpu = self.cpu_by_external_id.get(event.external_id) if event.external_id else None
        if cpu is not None and id(cpu) in self.host_of:
            return GpuNode(node_id, event, self.host_of[id(cpu)], None, GpuLinkStrategy.EXTERNAL_ID)
        return self._orphan(node_id, event, None, NO_LAUNCH_EVENT)

    def _orphan(self, node_id, event, launch, reason) -> GpuNode:
        self.orphans[reason] += 1
        return GpuNode(node_id, event, None, launch, GpuLinkStrategy.NONE, orphan_reason=reason)

    def _parent_at(self, launch: KinetoEvent, nccl: bool) -> Union[int, str]:
        """The host op enclosing the launch call, or why there is none (an orphan reason:
        no CPU op of the calling thread encloses the call, or the ones that do were not
        matched with a host op: not recorded in the host ET, or their match was rejected)."""
        nesting = self.nestings.get((launch.pid, launch.tid))
        index = nesting.innermost_at(launch.ts_us or 0) if nesting is not None else None
        if nesting is None or index is None:
            return NO_ENCLOSING_OP
        chain = [index, *nesting.ancestors(index)]
        if nccl:
            for candidate in chain:
                event = nesting.events[candidate]
                if event.name.startswith(NCCL_OP_PREFIX) and id(event) in self.host_of:
                    return self.host_of[id(event)]
        for candidate in chain:
            host_id = self.host_of.get(id(nesting.events[candidate]))
            if host_id is not None:
                return host_id
        return UNMATCHED_ENCLOSING_OP
