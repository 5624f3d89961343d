"""Kineto trace JSON as PyTorch 2.x writes it, streamed event by event."""

from __future__ import annotations

from typing import IO

from chakra.synth.jsonstream import ArrayWriter, TimeFormat, encode_members
from chakra.synth.options import SynthOptions
from chakra.synth.records import (
    CollectiveCall,
    GpuRecord,
    HostOpRecord,
    ProcessGroup,
    RankIdentity,
    RuntimeRecord,
    SyncRecord,
)
from chakra.synth.vocabulary import (
    API_CATEGORY,
    CBID,
    COLLECTIVES,
    COMPUTE_STREAM,
    COPY_STREAM,
    NCCL_VERSION,
    RECORD_PARAM_COMMS,
    Category,
    SyncKind,
    device_properties,
)

BASE_TIME_NS = 1_711_964_646_000_000_000
_STREAM_NAMES = (COMPUTE_STREAM, COPY_STREAM)


def comm_args(call: CollectiveCall) -> dict:
    """The process-group and message args Kineto puts on record_param_comms and NCCL kernels."""
    return {
        "Collective name": COLLECTIVES[call.kind].collective_name,
        "In msg nelems": call.in_nelems,
        "Out msg nelems": call.out_nelems,
        "Group size": len(call.ranks),
        "dtype": "Float",
        "In split size": "[]",
        "Out split size": "[]",
        "Process Group Name": call.pg.name,
        "Process Group Description": call.pg.desc,
        "Process Group Ranks": str(list(call.pg.ranks)),
    }


def _pg_config(groups: tuple[ProcessGroup, ...]) -> list[dict]:
    return [
        {
            "pg_name": g.name,
            "pg_desc": g.desc,
            "backend_config": "cuda:nccl",
            "pg_size": len(g.ranks),
            "ranks": list(g.ranks),
        }
        for g in groups
    ]


#: Kineto thread labels: main, autograd, data loader, gloo worker (the first two always).
THREAD_LABELS = ("pt_main_thread", "pt_autograd_0", "pt_data_loader", "pt_gloo_runloop")


class KinetoWriter:
    """Writes one rank's Kineto trace to ``stream`` (binary); events in completion order.

    Call :meth:`close` with the trace's end time to write the ``Trace`` span and the footer.
    """

    def __init__(self, stream: IO[bytes], options: SynthOptions, identity: RankIdentity) -> None:
        self._stream = stream
        self._time = TimeFormat(options.integer_timestamps)
        self._rf = options.kineto_has_rf_id
        self._flows = options.flows
        self._sync_records = options.cuda_sync_records
        self._data_loader = options.worker_threads
        # Kineto of the 1.0.1 era recorded no process-group or message args
        self._comm_args = not options.legacy_host_et
        self._pid = identity.pid
        self._tids = identity.tids
        self._device = identity.device
        self._start_ns = identity.start_ns
        self._name = f"rank{identity.rank}.kineto.json"
        header = {
            "schemaVersion": 1,
            "deviceProperties": device_properties(),
            "distributedInfo": {
                "backend": "nccl", "rank": identity.rank, "world_size": options.ranks,
                **({} if options.legacy_host_et else {
                    "pg_count": len(identity.groups), "pg_config": _pg_config(identity.groups)}),
                "nccl_version": NCCL_VERSION,
            },
            "record_shapes": 1,
            "with_stack": 0,
        }  # fmt: skip
        stream.write(b"{" + encode_members(header) + b',\n"traceEvents": ')
        self._events = ArrayWriter(stream)
        self._events.open()
        self._metadata(identity.streams)

    def _metadata(self, streams: tuple[int, ...]) -> None:
        """process_*/thread_* ``M`` events for the CPU process, the GPU and each stream."""
        ts = self._time.ts(self._start_ns)

        def meta(name: str, pid: int, tid: int, args: dict) -> None:
            self._events.write(
                {"name": name, "ph": "M", "ts": ts, "pid": pid, "tid": tid, "args": args}
            )

        gpu_index = 16777216 + self._device
        for pid, label, index in ((self._pid, "CPU", self._pid),
                                  (self._device, f"GPU {self._device}", gpu_index)):  # fmt: skip
            meta("process_name", pid, 0, {"name": "python3.11"})
            meta("process_labels", pid, 0, {"labels": label})
            meta("process_sort_index", pid, 0, {"sort_index": index})
        for tid, label in zip(self._tids, THREAD_LABELS):
            if label == "pt_data_loader" and not self._data_loader:
                continue  # a gloo worker without the data loader (blocking_gloo alone)
            meta("thread_name", self._pid, tid, {"name": f"thread {tid} ({label})"})
            meta("thread_sort_index", self._pid, tid, {"sort_index": tid})
        for stream in streams:
            meta("thread_name", self._device, stream, {"name": f"stream {stream} "})
            meta("thread_sort_index", self._device, stream, {"sort_index": stream})

    def host_op(self, record: HostOpRecord) -> None:
        action = record.action
        args: dict = {"External id": record.external_id}
        if self._rf:
            args["Record function id"] = record.rf_id
        if action.seq >= 0:
            args["Sequence number"] = action.seq
            args["Fwd thread id"] = action.fwd_thread
        args["Ev Idx"] = record.ev_idx
        if action.comm is not None and action.name == RECORD_PARAM_COMMS and self._comm_args:
            args.update(comm_args(action.comm))
            args["Global rank start"] = action.comm.ranks[0]
            args["Global rank stride"] = 1
        ts, dur = self._time.span(record.ts_ns, record.end_ns)
        self._events.write(
            {
                "ph": "X",
                "cat": action.cat,
                "name": action.name,
                "pid": self._pid,
                "tid": record.tid,
                "ts": ts,
                "dur": dur,
                "args": args,
            }
        )
        if action.flow_start or action.flow_end:
            flow = {"ph": "s" if action.flow_start else "f", "id": action.seq + 1,
                    "pid": self._pid, "tid": record.tid, "ts": ts, "cat": Category.FWDBWD,
                    "name": Category.FWDBWD}  # fmt: skip
            if action.flow_end:
                flow["bp"] = "e"
            self._events.write(flow)

    def runtime(self, record: RuntimeRecord) -> None:
        ts, dur = self._time.span(record.ts_ns, record.end_ns)
        self._events.write(
            {
                "ph": "X",
                "cat": API_CATEGORY[record.name],
                "name": record.name,
                "pid": self._pid,
                "tid": record.tid,
                "ts": ts,
                "dur": dur,
                "args": {
                    "External id": record.external_id,
                    "cbid": CBID[record.name],
                    "correlation": record.correlation,
                },
            }
        )

    def gpu(self, record: GpuRecord) -> None:
        ts, dur = self._time.span(record.ts_ns, record.end_ns)
        args = {"External id": record.external_id, "device": record.device, "context": 1,
                "stream": record.stream, "correlation": record.correlation}  # fmt: skip
        if record.category == Category.KERNEL:
            args["queued"] = 0
            args["grid"] = [132, 1, 1]
            args["block"] = [256, 1, 1]
            if record.collective is not None and self._comm_args:
                args.update(comm_args(record.collective))
        else:
            args["bytes"] = record.nbytes
            span = max(record.end_ns - record.ts_ns, 1)
            args["memory bandwidth (GB/s)"] = round(record.nbytes / span, 6)
        self._events.write(
            {
                "ph": "X",
                "cat": record.category,
                "name": record.name,
                "pid": record.device,
                "tid": record.stream,
                "ts": ts,
                "dur": dur,
                "args": args,
            }
        )
        if self._flows:
            launch = record.launch
            self._events.write(
                {
                    "ph": "s",
                    "id": record.correlation,
                    "pid": self._pid,
                    "tid": launch.tid,
                    "ts": self._time.ts(launch.ts_ns),
                    "cat": Category.AC2G,
                    "name": Category.AC2G,
                }
            )
            self._events.write(
                {
                    "ph": "f",
                    "id": record.correlation,
                    "pid": record.device,
                    "tid": record.stream,
                    "ts": ts,
                    "cat": Category.AC2G,
                    "name": Category.AC2G,
                    "bp": "e",
                }
            )

    def sync(self, record: SyncRecord) -> None:
        """A ``cuda_sync`` record (none in the ``no_cuda_sync`` vintage)."""
        if not self._sync_records:
            return
        call = record.call
        ts, dur = self._time.span(call.ts_ns, call.end_ns)
        args: dict = {"External id": call.external_id, "cuda_sync_kind": record.kind}
        if record.kind in (SyncKind.STREAM_WAIT_EVENT, SyncKind.EVENT_SYNC):
            args["wait_on_stream"] = record.wait_on_stream
            args["wait_on_cuda_event_record_corr_id"] = record.record_correlation
            args["wait_on_cuda_event_id"] = record.event_id
        args.update(
            stream=record.stream, correlation=call.correlation, device=record.device, context=1
        )
        self._events.write(
            {
                "ph": "X",
                "cat": Category.CUDA_SYNC,
                "name": record.kind,
                "pid": record.device,
                "tid": record.stream,
                "ts": ts,
                "dur": dur,
                "args": args,
            }
        )

    def close(self, end_ns: int) -> None:
        """Write the profiler span, close the event array and write the footer."""
        ts, dur = self._time.span(self._start_ns, end_ns)
        self._events.write(
            {
                "ph": "X",
                "cat": "Trace",
                "ts": ts,
                "dur": dur,
                "pid": "Spans",
                "tid": "PyTorch Profiler",
                "name": "PyTorch Profiler (0)",
                "args": {"Op count": 0},
            }
        )
        self._events.write(
            {
                "name": "Iteration Start: PyTorch Profiler",
                "ph": "i",
                "s": "g",
                "pid": "Traces",
                "tid": "Trace PyTorch Profiler",
                "ts": ts,
            }
        )
        self._events.close()
        footer = {"traceName": self._name, "displayTimeUnit": "ms",
                  "baseTimeNanoseconds": BASE_TIME_NS}  # fmt: skip
        self._stream.write(b",\n" + encode_members(footer) + b"}\n")
