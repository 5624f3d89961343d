"""Ground truth files: per rank (``chakra-synth-truth/1``) and per job (``chakra-synth-job/1``).

A rank's truth is one JSON object with four arrays produced interleaved (five with
``blocking_gloo``: ``host_waits``, the time a thread blocked in no op); ``host_ops`` streams
straight into the output, the others into temporary spool files appended at the end.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable
from typing import IO

import msgspec

from chakra.synth.jsonstream import ArrayWriter, TimeFormat, encode_members
from chakra.synth.options import SynthOptions
from chakra.synth.records import (
    GpuRecord,
    HostOpRecord,
    HostWaitRecord,
    ProcessGroup,
    RuntimeRecord,
)

TRUTH_FORMAT = "chakra-synth-truth/1"
JOB_FORMAT = "chakra-synth-job/1"


class TruthWriter:
    """Writes one rank's truth to ``stream`` (binary); spools live in ``spool_dir``."""

    def __init__(self, stream: IO[bytes], options: SynthOptions, rank: int, spool_dir: str):
        self._stream = stream
        self._time = TimeFormat(options.integer_timestamps)
        header = {"format": TRUTH_FORMAT, "rank": rank, "world_size": options.ranks,
                  "seed": options.seed, "options": options.describe()}  # fmt: skip
        stream.write(b"{" + encode_members(header) + b',\n"host_ops": ')
        self._host_ops = ArrayWriter(stream)
        self._host_ops.open()
        self._spools: list[IO[bytes]] = []
        self._runtime = self._spooled(spool_dir)
        self._gpu = self._spooled(spool_dir)
        self._edges = self._spooled(spool_dir)
        self._arrays = [("runtime_calls", self._runtime), ("gpu_ops", self._gpu),
                        ("edges", self._edges)]  # fmt: skip
        if options.blocking_gloo:
            self._host_waits = self._spooled(spool_dir)
            self._arrays.append(("host_waits", self._host_waits))

    def _spooled(self, spool_dir: str) -> ArrayWriter:
        # Lives as long as the writer; closed by close() or discard().
        spool = tempfile.TemporaryFile(dir=spool_dir, prefix=".truth-spool-")  # noqa: SIM115
        self._spools.append(spool)
        writer = ArrayWriter(spool)
        writer.open()
        return writer

    def host_op(self, record: HostOpRecord) -> None:
        """An op as it ran; ``stale_host_parent_id`` (only where it differs) is the parent the
        host ET gives it, an op that had ended before it began."""
        ts, dur = self._time.span(record.ts_ns, record.end_ns)
        action = record.action
        entry = {
            "host_id": record.host_id,
            "name": action.name,
            "cat": action.cat,
            "tid": record.tid,
            "rf_id": record.et_rf_id,
            "external_id": record.external_id,
            "ts_us": ts,
            "dur_us": dur,
            "parent_host_id": record.parent_host_id,
            "step": record.step,
        }
        stale = action.stale_parent and record.host_id is not None
        if stale and record.et_parent != record.parent_host_id:
            entry["stale_host_parent_id"] = record.et_parent
        self._host_ops.write(entry)

    def host_wait(self, record: HostWaitRecord) -> None:
        """Time thread ``tid`` blocked inside an op (its self time) until another ended."""
        ts, dur = self._time.span(record.ts_ns, record.end_ns)
        self._host_waits.write(
            {
                "tid": record.tid,
                "ts_us": ts,
                "dur_us": dur,
                "step": record.step,
                "parent_external_id": record.parent_external_id,
                "parent_host_id": record.parent_host_id,
                "waited_for_external_id": record.waited_for_external_id,
                "waited_for_host_id": record.waited_for_host_id,
            }
        )

    def runtime(self, record: RuntimeRecord) -> None:
        ts, dur = self._time.span(record.ts_ns, record.end_ns)
        self._runtime.write(
            {
                "correlation": record.correlation,
                "name": record.name,
                "tid": record.tid,
                "ts_us": ts,
                "dur_us": dur,
                "host_id": record.host_id,
                "stream": record.stream,
                "external_id": record.external_id,
            }
        )

    def gpu(self, record: GpuRecord) -> None:
        ts, dur = self._time.span(record.ts_ns, record.end_ns)
        call = record.collective
        collective = None
        if call is not None:
            collective = {"pg_name": call.pg.name, "seq": call.seq, "kind": call.kind}
        self._gpu.write(
            {
                "correlation": record.correlation,
                "name": record.name,
                "category": record.category,
                "stream": record.stream,
                "device": record.device,
                "ts_us": ts,
                "dur_us": dur,
                "launch_correlation": record.launch.correlation,
                "parent_host_id": record.parent_host_id,
                "collective": collective,
            }
        )

    def edge(self, kind: str, src: str, dst: str) -> None:
        self._edges.write({"kind": kind, "src": src, "dst": dst})

    def close(self) -> None:
        """Finish ``host_ops`` and append the spooled arrays."""
        self._host_ops.close()
        for (key, writer), spool in zip(self._arrays, self._spools):
            writer.close()
            self._stream.write(f',\n"{key}": '.encode())
            spool.seek(0)
            shutil.copyfileobj(spool, self._stream, 1 << 20)
            spool.close()
        self._stream.write(b"}\n")

    def discard(self) -> None:
        """Drop the spools (on failure)."""
        for spool in self._spools:
            spool.close()


class JobCollective(msgspec.Struct, frozen=True):
    """One collective (or send/recv pair) as the job truth lists it; ``end_us`` is the common
    end of its NCCL kernels; ``bytes`` the per-rank input message size."""

    pg_name: str
    seq: int
    kind: str
    bytes: int
    ranks: list[int]
    gpu_correlation_by_rank: dict[str, int]
    end_us: float


def write_job_truth(
    stream: IO[bytes],
    options: SynthOptions,
    groups: Iterable[ProcessGroup],
    collectives: Iterable[JobCollective],
) -> None:
    """Write ``job.truth.json``; collectives stream one by one."""
    header = {
        "format": JOB_FORMAT, "world_size": options.ranks, "seed": options.seed,
        "options": options.describe(),
        "process_groups": [{"pg_name": g.name, "pg_desc": g.desc, "ranks": list(g.ranks)}
                           for g in groups],
    }  # fmt: skip
    stream.write(b"{" + encode_members(header) + b',\n"collectives": ')
    writer = ArrayWriter(stream)
    writer.open()
    for collective in collectives:
        writer.write(collective)
    writer.close()
    stream.write(b"}\n")
