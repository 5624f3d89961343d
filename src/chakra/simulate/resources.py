"""What a simulated node holds while it runs: a :class:`Resource`, one node at a time.

As in SimPy's ``Resource`` (capacity 1), a node that wants a resource another node holds
waits; unlike SimPy's, whose queue grants requests as they arrive, a resource here serves
its nodes in an issue order decided before the run. In the default model
(:func:`chakra.simulate.sim_graph.build_graph`) that order is fixed by the graph: every host
thread and GPU stream runs its nodes in the order :func:`chakra.simulate.order.take_order`
takes them (measured start, then id), whatever order they become ready in. ASTRA-sim's
slots (:func:`chakra.simulate.astra_graph.build_astra_graph`) take instead the ready node
with the smallest id (:mod:`chakra.simulate.astra_events`), as ASTRA-sim does.

Resources sort as the tuples they replaced did, ``(kind, device, number)``: kinds in
alphabetical order (slot, stream, thread), then by device and number. Reports and timelines
list a graph's resources as it numbers them (in first use); plots and the HTML report's busy
bands in :func:`display_order`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Union

import msgspec
import numpy as np

#: A host thread (``tid``), a GPU stream of a device, or one of ASTRA-sim's slots.
ResourceKind = Literal["slot", "stream", "thread"]


class Resource(msgspec.Struct, frozen=True, order=True):
    """One resource of a rank, which runs one node at a time in one fixed issue order
    (given by the graph, see the module's docstring). ``number`` is a thread's tid, a
    stream's id (``"all"``: every stream of the device on one slot, ``--serialize-gpu``)
    or a slot's name (``"cpu"``, ``"gpu"``, ``"comm"``); ``device`` is 0 for threads and
    slots. Build one with :meth:`thread`, :meth:`stream` or :meth:`slot`."""

    kind: ResourceKind
    device: int = 0
    number: Union[int, str] = 0

    @classmethod
    def thread(cls, tid: int) -> Resource:
        """The host thread ``tid``."""
        return cls("thread", 0, tid)

    @classmethod
    def stream(cls, device: int, stream: Union[int, str]) -> Resource:
        """A GPU stream of ``device`` (``"all"``: the device's one slot)."""
        return cls("stream", device, stream)

    @classmethod
    def slot(cls, name: str) -> Resource:
        """ASTRA-sim's ``"cpu"``, ``"gpu"`` or ``"comm"`` slot of a rank."""
        return cls("slot", 0, name)

    @property
    def is_thread(self) -> bool:
        """A host thread."""
        return self.kind == "thread"

    @property
    def is_stream(self) -> bool:
        """A GPU stream (or a device's one slot, ``--serialize-gpu``)."""
        return self.kind == "stream"

    @property
    def is_gpu(self) -> bool:
        """Runs GPU work: a stream, or ASTRA-sim's GPU slot."""
        return self.kind == "stream" or (self.kind == "slot" and self.number == "gpu")

    @property
    def is_host(self) -> bool:
        """Runs host work: a thread, or ASTRA-sim's CPU slot."""
        return self.kind == "thread" or (self.kind == "slot" and self.number == "cpu")

    @property
    def label(self) -> str:
        """How reports name it (``report.json``, ``chakra_sim``'s lines, the idle view):
        ``thread 1``, ``device 0 stream 7``, ``gpu slot``."""
        if self.kind == "thread":
            return f"thread {self.number}"
        if self.kind == "slot":
            return f"{self.number} slot"
        return f"device {self.device} stream {self.number}"

    @property
    def plot_label(self) -> str:
        """How the plots and the HTML report's busy bands name it: ``thread 1``,
        ``stream 7`` (``d1 stream 7`` on a device other than 0), ``gpu slot``."""
        if self.kind == "stream":
            device = f"d{self.device} " if self.device else ""
            return f"{device}stream {self.number}"
        return self.label

    def track_label(self, devices: int) -> str:
        """Its timeline track's name on a rank with ``devices`` GPUs: ``stream 7``, or
        ``device 1 stream 7`` when ``devices`` > 1; otherwise :attr:`label`."""
        if self.kind == "stream" and devices <= 1:
            return f"stream {self.number}"
        return self.label


def display_order(resources: Sequence[Resource]) -> list[int]:
    """Indexes of ``resources`` as the plots and busy bands list them: threads first, then
    the rest, each part in resource order."""
    return sorted(range(len(resources)), key=lambda k: (not resources[k].is_thread, resources[k]))


def gpu_mask(resources: Sequence[Resource]) -> np.ndarray:
    """Per resource, whether it runs GPU work (:attr:`Resource.is_gpu`), plus a last False
    that a node holding no resource (slot -1) picks."""
    return np.array([r.is_gpu for r in resources] + [False], bool)


def device_count(resources: Sequence[Resource]) -> int:
    """How many devices the streams among ``resources`` are on."""
    return len({r.device for r in resources if r.is_stream})
