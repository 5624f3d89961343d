"""A :class:`~chakra.ingest.device_model.DeviceTrace` passed from one process to another
through a file (:func:`dump_device_trace` there, :func:`load_device_dump` here), for a trace
loaded in a forked process beside other work.

Why not one pickle: unpickling a whole trace keeps every event's constructor arguments
alive in the unpickler's memo until the end, and the pickle itself with them: that left
half as much memory again in use as loading the trace (measured: +41 MiB against +26 MiB
for the 50 MB trace of ``benchmarks/compare.py``). Here the events follow as a stream of
pickles of :data:`CHUNK_EVENTS` each, read one at a time: each chunk's memo is freed before
the next is read. Strings shared between events stay shared within a chunk.
"""

from __future__ import annotations

import pickle
from typing import IO

import msgspec

from chakra.ingest.device_model import DeviceTrace, KinetoEvent

#: Events per pickle: small enough that a chunk's memo is little, big enough that the
#: pickles' own overhead is (4,000: 0.055 s to read that trace's 70k events back).
CHUNK_EVENTS = 4000
#: The fields that hold the events, sent by chunks; the rest travels in one pickle first.
_EVENT_FIELDS = ("cpu_ops", "runtime_calls", "gpu_ops", "cuda_syncs", "gpu_annotations")


def dump_device_trace(trace: DeviceTrace, out: IO[bytes]) -> None:
    """Write ``trace`` to ``out`` as :func:`load_device_dump` reads it back, equal."""
    rest = msgspec.structs.replace(trace, **dict.fromkeys(_EVENT_FIELDS, ()))
    pickle.dump(rest, out, pickle.HIGHEST_PROTOCOL)
    for name in _EVENT_FIELDS:
        events: tuple[KinetoEvent, ...] = getattr(trace, name)
        starts = range(0, len(events), CHUNK_EVENTS)
        pickle.dump(len(starts), out, pickle.HIGHEST_PROTOCOL)
        for start in starts:
            pickle.dump(events[start : start + CHUNK_EVENTS], out, pickle.HIGHEST_PROTOCOL)


def load_device_dump(dumped: IO[bytes]) -> DeviceTrace:
    """The trace that :func:`dump_device_trace` wrote to ``dumped``."""
    rest = pickle.load(dumped)
    fields = {}
    for name in _EVENT_FIELDS:
        events: list[KinetoEvent] = []
        for _ in range(pickle.load(dumped)):
            events += pickle.load(dumped)
        fields[name] = tuple(events)
    return msgspec.structs.replace(rest, **fields)
