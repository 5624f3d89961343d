"""CUDA event and synchronisation handlers of :class:`~chakra.synth.timing.RankEngine`.

A mixin: the methods use the engine's runtime-call helpers (``_call``, ``_emit_call``,
``_stream``, ``_cpu_ns``, ``_uniform``), its program-event table ``_events`` and its sink.
"""

from __future__ import annotations

from typing import Optional

import msgspec

from chakra.synth.program import US
from chakra.synth.rank_state import EventState
from chakra.synth.records import (
    DeviceSync,
    EventRecord,
    EventSync,
    StreamSync,
    StreamWait,
    SyncRecord,
)
from chakra.synth.vocabulary import SyncKind


class SyncHandlers:
    """cudaEventRecord, cudaStreamWaitEvent and the blocking synchronisation calls."""

    def _record(self, action: EventRecord) -> None:
        call = self._call("cudaEventRecord", self._uniform(1500, 4 * US), action.stream)
        self._emit_call(call)
        self._cuda_event += 1
        event = EventState(
            action.stream, call.correlation, self._cuda_event, self._stream(action.stream)
        )
        self._events[action.event] = event

    def _stream_wait(self, action: StreamWait) -> None:
        event = self._events.pop(action.event)
        call = self._call("cudaStreamWaitEvent", self._uniform(US, 3 * US), action.stream)
        self._emit_call(call)
        self._sink.sync(
            SyncRecord(
                SyncKind.STREAM_WAIT_EVENT,
                call,
                action.stream,
                event.stream,
                event.record_correlation,
                event.cuda_id,
                self.device,
            )
        )
        if event.src_correlation:
            self._stream(action.stream).waits.append((event.src_correlation, event.src_end_ns))

    def _blocking_call(self, name: str, stream: Optional[int], waited: list[tuple[int, int]]):
        """A call that returns once every (correlation, end) in ``waited`` has finished."""
        call = self._call(name, self._uniform(2 * US, 4 * US), stream)
        end = call.end_ns
        for _correlation, gpu_end in waited:
            end = max(end, gpu_end + self._cpu_ns(US, 3 * US))
        self.now = end
        call = msgspec.structs.replace(call, end_ns=end)
        self._emit_call(call)
        for correlation, _end in waited:
            self._edge("host_sync", f"gpu:{correlation}", f"runtime:{call.correlation}")
        return call

    def _stream_sync(self, action: StreamSync) -> None:
        state = self._stream(action.stream)
        waited = [(state.last_correlation, state.last_end_ns)] if state.last_correlation else []
        call = self._blocking_call("cudaStreamSynchronize", action.stream, waited)
        self._sink.sync(
            SyncRecord(SyncKind.STREAM_SYNC, call, action.stream, -1, -1, -1, self.device)
        )

    def _device_sync(self, _action: DeviceSync) -> None:
        waited = [
            (state.last_correlation, state.last_end_ns)
            for _stream, state in sorted(self._streams.items())
            if state.last_correlation
        ]
        call = self._blocking_call("cudaDeviceSynchronize", None, waited)
        self._sink.sync(SyncRecord(SyncKind.CONTEXT_SYNC, call, -1, -1, -1, -1, self.device))

    def _event_sync(self, action: EventSync) -> None:
        event = self._events.pop(action.event)
        waited = [(event.src_correlation, event.src_end_ns)] if event.src_correlation else []
        call = self._blocking_call("cudaEventSynchronize", None, waited)
        self._sink.sync(
            SyncRecord(
                SyncKind.EVENT_SYNC,
                call,
                -1,
                event.stream,
                event.record_correlation,
                event.cuda_id,
                self.device,
            )
        )
