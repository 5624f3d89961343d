"""Short summaries of loaded traces (what ``chakra_trace_info`` prints): typed values whose
fields, in order, are the keys it prints (``msgspec.to_builtins`` gives the JSON form)."""

from __future__ import annotations

from collections import Counter
from typing import Literal, Optional, Union

import msgspec

from chakra.ingest.device_model import DeviceTrace
from chakra.ingest.host_model import HostTrace
from chakra.ingest.vocabulary import runtime_kind


class GroupSummary(msgspec.Struct, frozen=True):
    """A process group of a host ET: its name, description, member ranks and size."""

    pg_name: str
    pg_desc: Optional[str]
    ranks: list[int]
    group_size: Optional[int]


class HostSummary(msgspec.Struct, frozen=True):
    """A host ET: its ops (with an ``rf_id``, thread roots), process groups, and the
    ``record_param_comms`` ops by collective name."""

    kind: Literal["host execution trace"]
    schema: str
    pid: Optional[int]
    ops: int
    ops_with_rf_id: int
    thread_roots: int
    thread_ids: list[int]
    process_groups: list[GroupSummary]
    record_param_comms: dict[str, int]
    notes: list[str]


class DeviceSummary(msgspec.Struct, frozen=True):
    """A Kineto trace: its rank, events by category, CPU ops, runtime calls by kind, GPU ops
    by category, streams, syncs, flows and profiler steps."""

    kind: Literal["Kineto trace"]
    rank: Optional[int]
    world_size: Optional[int]
    host_pids: list[int]
    events_by_category: dict[str, int]
    cpu_ops: int
    cpu_ops_with_rf_id: int
    runtime_calls: dict[str, int]
    gpu_ops: dict[str, int]
    streams: list[int]
    cuda_syncs: int
    flows: int
    profiler_steps: list[int]


TraceSummary = Union[HostSummary, DeviceSummary]


def summarize_host_trace(trace: HostTrace) -> HostSummary:
    collectives = Counter(op.comm.collective_name for op in trace.ops if op.comm)
    return HostSummary(
        kind="host execution trace",
        schema=trace.schema,
        pid=trace.pid,
        ops=len(trace.ops),
        ops_with_rf_id=sum(1 for op in trace.ops if op.rf_id),
        thread_roots=len(trace.thread_roots()),
        thread_ids=list(trace.thread_ids),
        process_groups=[
            GroupSummary(g.pg_name, g.pg_desc, list(g.ranks), g.group_size)
            for g in trace.process_groups
        ],
        record_param_comms=dict(sorted((str(k), v) for k, v in collectives.items())),
        notes=list(trace.notes),
    )


def summarize_device_trace(trace: DeviceTrace) -> DeviceSummary:
    runtime = Counter(runtime_kind(e.name).value for e in trace.runtime_calls)
    gpu = Counter(e.category for e in trace.gpu_ops)
    return DeviceSummary(
        kind="Kineto trace",
        rank=trace.rank,
        world_size=trace.world_size,
        host_pids=list(trace.host_pids),
        events_by_category=dict(trace.category_counts),
        cpu_ops=len(trace.cpu_ops),
        cpu_ops_with_rf_id=sum(1 for e in trace.cpu_ops if e.rf_id is not None),
        runtime_calls=dict(sorted(runtime.items())),
        gpu_ops=dict(sorted(gpu.items())),
        streams=list(trace.streams),
        cuda_syncs=len(trace.cuda_syncs),
        flows=len(trace.flows),
        profiler_steps=[step.number for step in trace.steps],
    )
