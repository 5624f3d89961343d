"""Short, JSON-ready summaries of loaded traces (what ``chakra_trace_info`` prints)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from chakra.ingest.device_model import DeviceTrace
from chakra.ingest.host_model import HostTrace
from chakra.ingest.vocabulary import runtime_kind


def summarize_host_trace(trace: HostTrace) -> dict[str, Any]:
    collectives = Counter(op.comm.collective_name for op in trace.ops if op.comm)
    return {
        "kind": "host execution trace",
        "schema": trace.schema,
        "pid": trace.pid,
        "ops": len(trace.ops),
        "ops_with_rf_id": sum(1 for op in trace.ops if op.rf_id),
        "thread_roots": len(trace.thread_roots()),
        "thread_ids": list(trace.thread_ids),
        "process_groups": [
            {"pg_name": g.pg_name, "pg_desc": g.pg_desc, "ranks": list(g.ranks),
             "group_size": g.group_size}
            for g in trace.process_groups
        ],
        "record_param_comms": dict(sorted((str(k), v) for k, v in collectives.items())),
        "notes": list(trace.notes),
    }  # fmt: skip


def summarize_device_trace(trace: DeviceTrace) -> dict[str, Any]:
    runtime = Counter(runtime_kind(e.name).value for e in trace.runtime_calls)
    gpu = Counter(e.category for e in trace.gpu_ops)
    return {
        "kind": "Kineto trace",
        "rank": trace.rank,
        "world_size": trace.world_size,
        "host_pids": list(trace.host_pids),
        "events_by_category": dict(trace.category_counts),
        "cpu_ops": len(trace.cpu_ops),
        "cpu_ops_with_rf_id": sum(1 for e in trace.cpu_ops if e.rf_id is not None),
        "runtime_calls": dict(sorted(runtime.items())),
        "gpu_ops": dict(sorted(gpu.items())),
        "streams": list(trace.streams),
        "cuda_syncs": len(trace.cuda_syncs),
        "flows": len(trace.flows),
        "profiler_steps": [step.number for step in trace.steps],
    }
