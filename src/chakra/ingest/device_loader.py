"""Load a Kineto device trace (``.json`` or ``.json.gz``) into a :class:`DeviceTrace`."""

from __future__ import annotations

import logging
import re
from collections import Counter
from typing import Optional

import msgspec
from msgspec import field

from chakra.errors import PathLike, TraceFormatError
from chakra.ingest.device_model import (
    DeviceProperties,
    DeviceTrace,
    DistributedInfo,
    KinetoEvent,
    ProfilerStep,
)
from chakra.ingest.json_input import decode_trace, gc_paused, read_json_bytes
from chakra.ingest.vocabulary import (
    CPU_OP_CATEGORIES,
    GPU_OP_CATEGORIES,
    PROFILER_STEP_PREFIX,
    RUNTIME_CATEGORIES,
    Category,
)

logger = logging.getLogger(__name__)
WHAT = "Kineto trace"
_STEP_NUMBER = re.compile(r"ProfilerStep#(\d+)")
_TIMED_PHASES = frozenset({"X", "i", "I", "s", "f", "t", "B", "E"})


class _RawKinetoTrace(msgspec.Struct, gc=False):
    trace_events: list[KinetoEvent] = field(name="traceEvents")
    distributed: Optional[DistributedInfo] = field(default=None, name="distributedInfo")
    devices: list[DeviceProperties] = field(default_factory=list, name="deviceProperties")
    trace_name: Optional[str] = field(default=None, name="traceName")
    base_time_ns: Optional[int] = field(default=None, name="baseTimeNanoseconds")
    schema_version: Optional[int] = field(default=None, name="schemaVersion")


_DECODER = msgspec.json.Decoder(_RawKinetoTrace, strict=False)


def load_device_trace(path: PathLike, data: Optional[bytes] = None) -> DeviceTrace:
    """Load a Kineto trace; gzip is recognised by content.

    Raises :class:`~chakra.errors.TraceFormatError` (one line naming the file) for invalid
    JSON, a file of another kind, a timed event without a numeric ``ts``, or a negative
    duration. A trace without ProfilerStep annotations or flows loads fine. ``data`` is the
    file's decompressed content when the caller has already read it.
    """
    if data is None:
        data = read_json_bytes(path)
    with gc_paused():
        raw: _RawKinetoTrace = decode_trace(
            path, data, _DECODER, WHAT, other=("nodes", "host execution trace")
        )
        del data
        return _organise(path, raw)


def _sorted_by_start(events: list[KinetoEvent]) -> tuple[KinetoEvent, ...]:
    events.sort(key=lambda e: (e.ts_us, -e.dur_us))
    return tuple(events)


def _organise(path: PathLike, raw: _RawKinetoTrace) -> DeviceTrace:
    groups: dict[str, list[KinetoEvent]] = {
        "cpu": [], "runtime": [], "gpu": [], "sync": [], "gpu_annotation": [], "flow": [],
    }  # fmt: skip
    route = {
        **dict.fromkeys(CPU_OP_CATEGORIES, groups["cpu"]),
        **dict.fromkeys(RUNTIME_CATEGORIES, groups["runtime"]),
        **dict.fromkeys(GPU_OP_CATEGORIES, groups["gpu"]),
        Category.CUDA_SYNC: groups["sync"],
        Category.GPU_USER_ANNOTATION: groups["gpu_annotation"],
        Category.AC2G: groups["flow"],
    }
    steps: list[ProfilerStep] = []
    thread_names = []
    counts: Counter[str] = Counter()
    for index, event in enumerate(raw.trace_events):
        counts[event.category] += 1
        _check_timing(path, index, event)
        if event.phase == "M":
            if event.name == "thread_name" and event.args.label is not None:
                thread_names.append((event.pid, event.tid, event.args.label))
            continue
        bucket = route.get(event.category)
        if bucket is None:
            continue
        if bucket is groups["cpu"] and event.name.startswith(PROFILER_STEP_PREFIX):
            steps.append(_step(event))
            continue
        bucket.append(event)
    return DeviceTrace(
        path=str(path),
        cpu_ops=_sorted_by_start(groups["cpu"]),
        runtime_calls=_sorted_by_start(groups["runtime"]),
        gpu_ops=_sorted_by_start(groups["gpu"]),
        cuda_syncs=_sorted_by_start(groups["sync"]),
        gpu_annotations=_sorted_by_start(groups["gpu_annotation"]),
        flows=_sorted_by_start(groups["flow"]),
        steps=tuple(sorted(steps, key=lambda s: (s.number, s.ts_us))),
        category_counts=tuple(sorted(counts.items())),
        thread_names=tuple(thread_names),
        distributed=raw.distributed,
        devices=tuple(raw.devices),
        trace_name=raw.trace_name,
        base_time_ns=raw.base_time_ns,
        schema_version=raw.schema_version,
    )


def _check_timing(path: PathLike, index: int, event: KinetoEvent) -> None:
    if event.ts_us is None and event.phase in _TIMED_PHASES:
        raise TraceFormatError(
            path, f"event {index} ({event.name!r}, ph {event.phase!r}) has no 'ts'"
        )
    if event.dur_us < 0:
        raise TraceFormatError(
            path, f"event {index} ({event.name!r}) has a negative duration {event.dur_us}"
        )


def _step(event: KinetoEvent) -> ProfilerStep:
    match = _STEP_NUMBER.match(event.name)
    return ProfilerStep(number=int(match.group(1)) if match else -1, event=event)
