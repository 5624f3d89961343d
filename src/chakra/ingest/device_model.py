"""Typed, immutable model of a Kineto (``torch.profiler``) device trace.

A :class:`KinetoEvent` is exactly one ``traceEvents`` element, decoded by msgspec with the
keys the project uses; everything else is skipped at parse time. Times stay in the file's
unit, microseconds, integer or fractional (``ts_us``, ``dur_us``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional, Union

import msgspec
from msgspec import field

#: Kineto timestamps are microseconds, and the CPU and GPU clocks agree to about one: an order
#: of measured events is only trusted beyond this.
CLOCK_RESOLUTION_US = 1.0


def _as_int(value: Union[int, str, None]) -> Optional[int]:
    """An id that may be written as an int or a string (``"7"``, HIP's ``"0x0"``)."""
    if value is None or isinstance(value, int):
        return value
    try:
        return int(value, 0)
    except ValueError:
        return None


class KinetoArgs(msgspec.Struct, frozen=True, gc=False):
    """The ``args`` of an event (only the keys the toolchain reads)."""

    external_id: Optional[int] = field(default=None, name="External id")
    rf_id: Optional[int] = field(default=None, name="Record function id")
    ev_idx: Optional[int] = field(default=None, name="Ev Idx")
    sequence_number: Optional[int] = field(default=None, name="Sequence number")
    fwd_thread_id: Optional[int] = field(default=None, name="Fwd thread id")
    # CPU ops recorded with record_shapes
    input_dims: Any = field(default=None, name="Input Dims")
    input_types: Any = field(default=None, name="Input type")
    correlation: Optional[int] = None
    cbid: Optional[int] = None
    device: Optional[int] = None
    stream: Union[int, str, None] = None
    nbytes: Optional[int] = field(default=None, name="bytes")
    copy_kind: Union[str, int, None] = field(default=None, name="kind")
    # NCCL kernels and record_param_comms
    pg_name: Union[str, int, None] = field(default=None, name="Process Group Name")
    pg_desc: Optional[str] = field(default=None, name="Process Group Description")
    pg_ranks: Any = field(default=None, name="Process Group Ranks")
    collective_name: Optional[str] = field(default=None, name="Collective name")
    in_msg_nelems: Optional[int] = field(default=None, name="In msg nelems")
    out_msg_nelems: Optional[int] = field(default=None, name="Out msg nelems")
    group_size: Optional[int] = field(default=None, name="Group size")
    dtype: Optional[str] = None
    in_split_size: Any = field(default=None, name="In split size")
    out_split_size: Any = field(default=None, name="Out split size")
    global_rank_start: Optional[int] = field(default=None, name="Global rank start")
    global_rank_stride: Optional[int] = field(default=None, name="Global rank stride")
    # cuda_sync events (CUPTI synchronization records)
    sync_kind: Optional[str] = field(default=None, name="cuda_sync_kind")
    wait_on_stream: Optional[int] = None
    wait_on_event_correlation: Optional[int] = field(
        default=None, name="wait_on_cuda_event_record_corr_id"
    )
    wait_on_event_id: Optional[int] = field(default=None, name="wait_on_cuda_event_id")
    # metadata ("M") events: process_name / thread_name / *_sort_index
    label: Optional[str] = field(default=None, name="name")


#: The args of every event without any key read (shared: one instance for all).
NO_ARGS = _NO_ARGS = KinetoArgs()


class KinetoEvent(msgspec.Struct, frozen=True, gc=False):
    """One trace event. ``pid``/``tid`` are the process and thread for host events and the
    device and stream for GPU events. ``flow_id`` is the ``id`` of flow (``s``/``f``)
    events. A loaded event's ``args`` is the compact class of its kind
    (:mod:`chakra.ingest.device_args`), which answers every ``KinetoArgs`` attribute."""

    phase: str = field(default="", name="ph")
    category: str = field(default="", name="cat")
    name: str = ""
    pid: Union[int, str] = 0
    tid: Union[int, str] = 0
    ts_us: Union[int, float, None] = field(default=None, name="ts")
    dur_us: Union[int, float] = field(default=0, name="dur")
    flow_id: Union[int, str, None] = field(default=None, name="id")
    args: KinetoArgs = _NO_ARGS

    @property
    def end_us(self) -> Union[int, float]:
        return (self.ts_us or 0) + self.dur_us

    @property
    def stream(self) -> Optional[int]:
        """The stream of a GPU op (``args.stream``; HIP writes some as ``"0x0"``)."""
        return _as_int(self.args.stream)

    @property
    def correlation(self) -> Optional[int]:
        return self.args.correlation

    @property
    def external_id(self) -> Optional[int]:
        return self.args.external_id

    @property
    def rf_id(self) -> Optional[int]:
        return self.args.rf_id


class ProcessGroupConfig(msgspec.Struct, frozen=True, gc=False):
    """One entry of ``distributedInfo.pg_config``."""

    pg_name: Union[str, int]
    pg_desc: Optional[str] = None
    backend_config: Optional[str] = None
    pg_size: Optional[int] = None
    ranks: Any = None


class DistributedInfo(msgspec.Struct, frozen=True, gc=False):
    """Kineto's top-level ``distributedInfo``: this process's rank in the job."""

    rank: Optional[int] = None
    world_size: Optional[int] = None
    backend: Optional[str] = None
    pg_count: Optional[int] = None
    pg_config: tuple[ProcessGroupConfig, ...] = ()
    nccl_version: Optional[str] = None


class DeviceProperties(msgspec.Struct, frozen=True, gc=False):
    """One entry of ``deviceProperties`` (GPU model and size)."""

    id: int = 0
    name: str = ""
    total_global_mem_bytes: Optional[int] = field(default=None, name="totalGlobalMem")
    num_sms: Optional[int] = field(default=None, name="numSms")


class ProfilerStep(msgspec.Struct, frozen=True, gc=False):
    """A ``ProfilerStep#N`` annotation: the window of iteration ``number``."""

    number: int
    event: KinetoEvent

    @property
    def ts_us(self) -> Union[int, float]:
        return self.event.ts_us or 0

    @property
    def end_us(self) -> Union[int, float]:
        return self.event.end_us


class DeviceTrace(msgspec.Struct, frozen=True, gc=False):
    """A loaded Kineto trace, its events sorted by start time within each group.

    - ``cpu_ops``: ``cpu_op`` and ``user_annotation`` events except ProfilerStep markers,
      sorted by (start, longest first) so that an enclosing op precedes what it encloses;
    - ``runtime_calls``: ``cuda_runtime``/``cuda_driver`` events (launches, copies, syncs...);
    - ``gpu_ops``: ``kernel``, ``gpu_memcpy`` and ``gpu_memset`` events;
    - ``cuda_syncs``: CUPTI synchronization records (``cuda_sync``);
    - ``gpu_annotations``: ``gpu_user_annotation`` spans; ``flows``: ``ac2g`` flow events, a
      read-only sequence stored by column (:mod:`chakra.ingest.device_flows`);
    - ``steps``: ProfilerStep windows, by number (empty when the trace has none);
    - ``category_counts``: how many events of each category the file held, all included.
    """

    path: str
    cpu_ops: tuple[KinetoEvent, ...]
    runtime_calls: tuple[KinetoEvent, ...]
    gpu_ops: tuple[KinetoEvent, ...]
    cuda_syncs: tuple[KinetoEvent, ...]
    gpu_annotations: tuple[KinetoEvent, ...]
    flows: Sequence[KinetoEvent]
    steps: tuple[ProfilerStep, ...]
    category_counts: tuple[tuple[str, int], ...]
    thread_names: tuple[tuple[Union[int, str], Union[int, str], str], ...] = ()
    distributed: Optional[DistributedInfo] = None
    devices: tuple[DeviceProperties, ...] = ()
    trace_name: Optional[str] = None
    base_time_ns: Optional[int] = None
    schema_version: Optional[int] = None

    @property
    def rank(self) -> Optional[int]:
        return self.distributed.rank if self.distributed else None

    @property
    def world_size(self) -> Optional[int]:
        return self.distributed.world_size if self.distributed else None

    @property
    def host_pids(self) -> tuple[int, ...]:
        """Distinct process ids of the CPU ops (one for a single-process trace)."""
        return tuple(sorted({e.pid for e in self.cpu_ops if isinstance(e.pid, int)}))

    @property
    def streams(self) -> tuple[int, ...]:
        """Distinct streams of the GPU ops, sorted."""
        return tuple(sorted({s for s in (e.stream for e in self.gpu_ops) if s is not None}))

    def count(self, category: str) -> int:
        return dict(self.category_counts).get(category, 0)
