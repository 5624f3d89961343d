"""The ET+ model: what ``chakra_trace_link`` writes (:mod:`chakra.link.et_plus`) and the
converter reads (:mod:`chakra.convert.et_plus_input`), ours or the reference linker's.
Times in microseconds. Here, below both stages, so that neither imports the other."""

from __future__ import annotations

from typing import Any, Optional, Union

import msgspec

from chakra.errors import PathLike
from chakra.ingest.edges import Edge
from chakra.ingest.host_json import NULL_JSON
from chakra.ingest.host_model import HostAttr

Number = Union[int, float]


#: An entry of an ET+ node's ``attrs``: the host ET's attr, as the linker writes it.
EtPlusAttr = HostAttr


class Collective(msgspec.Struct, frozen=True, gc=False):
    """Kineto's collective metadata of an NCCL kernel, as our linker copies it."""

    name: Optional[str] = None
    dtype: Optional[str] = None
    in_msg_nelems: Optional[int] = None
    out_msg_nelems: Optional[int] = None
    group_size: Optional[int] = None
    pg_name: Union[str, int, None] = None
    pg_desc: Optional[str] = None
    pg_ranks: Any = None


class LaunchCall(msgspec.Struct, frozen=True, gc=False):
    """The runtime/driver call that launched a GPU op (our ET+ records it)."""

    ts: Optional[Number] = None
    dur: Optional[Number] = None
    name: Optional[str] = None


class EtPlusNode(msgspec.Struct, frozen=True, gc=False):
    """One ET+ node. ``inputs``/``outputs`` stay raw JSON. Times in microseconds."""

    id: int
    name: str
    ctrl_deps: Optional[int] = None
    inputs: msgspec.Raw = NULL_JSON
    outputs: msgspec.Raw = NULL_JSON
    attrs: list[HostAttr] = []
    ts: Optional[Number] = None
    inclusive_dur: Optional[Number] = None
    exclusive_dur: Optional[Number] = None
    dur: Optional[Number] = None
    inter_thread_dep: Optional[int] = None
    sync_dep: list[int] = []
    cat: Optional[str] = None
    stream: Optional[int] = None
    device: Optional[int] = None
    correlation: Optional[int] = None
    pg_name: Union[str, int, None] = None
    collective: Optional[Collective] = None
    idle_gap: Optional[Number] = None
    kineto_thread: Optional[list[Union[int, str]]] = None
    ran_under: Optional[int] = None  # the node it ran under, when not its ctrl_deps parent
    launch: Optional[LaunchCall] = None

    @property
    def end(self) -> Optional[Number]:
        """Measured end (µs), when the node was timed."""
        length = self.dur if self.dur is not None else self.inclusive_dur
        return None if self.ts is None or length is None else self.ts + length

    @property
    def is_gpu(self) -> bool:
        return self.cat is not None

    def attr(self, name: str, default: Any = None) -> Any:
        for entry in self.attrs:
            if entry.name == name:
                return entry.value
        return default


class LinkSummary(msgspec.Struct, frozen=True, gc=False):
    """What the converter reads of the linker's report (``chakra_link.report``): the
    evidence the measured times contradict, by kind, which the linker left out."""

    contradictions: dict[str, int] = {}


class RecordedThread(msgspec.Struct, frozen=True, gc=False):
    """A replay thread (``tid``, as its nodes' ``tid`` attribute says) and the Kineto thread
    it was recorded on: process and thread id (the operating system's) and the name Kineto
    gave it ("" when none)."""

    tid: int
    kineto_pid: Union[int, str]
    kineto_tid: Union[int, str]
    name: str = ""

    def track_name(self) -> str:
        """The replay thread, then the profile's: ``thread 2 · thread 9001
        (pt_gloo_runloop)`` (Kineto's name), ``thread 2 · tid 9001`` (no name)."""
        return f"thread {self.tid} · {self.name or f'tid {self.kineto_tid}'}"


class LinkInfo(msgspec.Struct, frozen=True, gc=False):
    format: Optional[str] = None
    rank: Optional[int] = None
    dependencies: list[Edge] = []
    report: Optional[LinkSummary] = None
    #: the replay threads' Kineto threads (:mod:`chakra.link.thread_map`); empty in ET+
    #: from before it was written
    threads: list[RecordedThread] = []
    #: ``host_et``, or ``kineto`` where the host side was made from the Kineto trace alone
    #: (None: ET+ from before it was written)
    host_source: Optional[str] = None


class EtPlusTrace(msgspec.Struct, frozen=True, gc=False):
    """A loaded ET+ file. ``link`` is None for ET+ written by the reference linker.

    ``outline``: most nodes lack their inputs, outputs and attrs (see :func:`load_et_plus`);
    :func:`with_payloads` reads what they lack again."""

    path: str
    schema: str
    pid: Optional[int]
    time: Optional[str]
    start_ts: Optional[int]
    finish_ts: Optional[int]
    nodes: list[EtPlusNode]
    link: Optional[LinkInfo]
    outline: bool = False

    @classmethod
    def of(
        cls,
        path: PathLike,
        header: Any,
        nodes: list[EtPlusNode],
        link: Optional[LinkInfo],
        outline: bool = False,
    ) -> EtPlusTrace:
        """The trace of ``nodes`` at ``path``, with the header fields (schema, pid, time,
        start_ts, finish_ts) of ``header``: a decoded ET+ header or a HostTrace."""
        return cls(str(path), header.schema, header.pid, header.time, header.start_ts,
                   header.finish_ts, nodes, link, outline)  # fmt: skip


class NodePayload(msgspec.Struct, frozen=True, gc=False):
    """What an outline node lacks (see :func:`load_et_plus`), read again when writing."""

    id: int
    inputs: msgspec.Raw = NULL_JSON
    outputs: msgspec.Raw = NULL_JSON
    attrs: list[HostAttr] = []
