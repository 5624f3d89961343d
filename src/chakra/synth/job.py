"""Generate a whole job: every rank's host ET, Kineto trace and truth, plus the job truth.

Ranks run in lock step inside one process: each rank's engine runs until it reaches a
collective; when every member of the collective's group has reached it, its common end is
known and the members continue. Each rank's output streams to disk as it is produced.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

from chakra.errors import FileAccessError, PathLike, SynthError
from chakra.fileio import AtomicGroup, atomic_output
from chakra.synth.host_et_writer import HostEtWriter
from chakra.synth.jsonstream import TimeFormat
from chakra.synth.kineto_writer import KinetoWriter
from chakra.synth.options import SynthOptions
from chakra.synth.program import JobPlan, plan_job
from chakra.synth.rank_state import CollectiveArrival, rank_identity
from chakra.synth.records import (
    EtNode,
    GpuRecord,
    HostOpRecord,
    HostWaitRecord,
    RuntimeRecord,
    SyncRecord,
)
from chakra.synth.timing import RankEngine
from chakra.synth.truth_writer import JobCollective, TruthWriter, write_job_truth

logger = logging.getLogger(__name__)

JOB_TRUTH_NAME = "job.truth.json"


@dataclasses.dataclass(frozen=True)
class RankSummary:
    """What one rank's files hold: counts of host ops, runtime calls, GPU ops and edges."""

    rank: int
    host_et: Path
    kineto: Path
    truth: Path
    host_ops: int
    runtime_calls: int
    gpu_ops: int
    edges: int


@dataclasses.dataclass(frozen=True)
class JobSummary:
    """The files written and their counts; ``collectives`` counts job-level collectives."""

    out_dir: Path
    job_truth: Path
    ranks: tuple[RankSummary, ...]
    collectives: int


def rank_file_names(options: SynthOptions, rank: int) -> tuple[str, str, str]:
    """File names of ``rank``'s host ET, Kineto trace and truth."""
    suffix = ".json.gz" if options.gzip else ".json"
    return (
        f"rank{rank}.host_et{suffix}",
        f"rank{rank}.kineto{suffix}",
        f"rank{rank}.truth{suffix}",
    )


class _RankOutputs:
    """The three writers of one rank behind the engine's sink interface."""

    def __init__(self, plan: JobPlan, rank: int, out_dir: Path, group: AtomicGroup) -> None:
        options = plan.options
        identity = rank_identity(plan, rank)
        self.paths = tuple(out_dir / name for name in rank_file_names(options, rank))
        self._files = [group.add(path) for path in self.paths]
        self.host_et = HostEtWriter(self._files[0].stream, options, identity)
        self.kineto = KinetoWriter(self._files[1].stream, options, identity)
        self.truth = TruthWriter(self._files[2].stream, options, rank, str(out_dir))

    def host_op(self, record: HostOpRecord) -> None:
        self.host_et.host_op(record)
        self.kineto.host_op(record)
        self.truth.host_op(record)

    def host_wait(self, record: HostWaitRecord) -> None:
        self.truth.host_wait(record)

    def et_node(self, node: EtNode) -> None:
        self.host_et.et_node(node)

    def runtime(self, record: RuntimeRecord) -> None:
        self.kineto.runtime(record)
        self.truth.runtime(record)

    def gpu(self, record: GpuRecord) -> None:
        self.kineto.gpu(record)
        self.truth.gpu(record)

    def sync(self, record: SyncRecord) -> None:
        self.kineto.sync(record)

    def edge(self, kind: str, src: str, dst: str) -> None:
        self.truth.edge(kind, src, dst)

    def commit(self, end_ns: int) -> None:
        self.host_et.close(end_ns)
        self.kineto.close(end_ns)
        self.truth.close()
        for file in self._files:
            file.commit()

    def discard(self) -> None:
        self.truth.discard()
        for file in self._files:
            file.discard()


def generate_job(options: SynthOptions, out_dir: PathLike) -> JobSummary:
    """Write every rank's files and ``job.truth.json`` into ``out_dir`` (created if needed).

    The files appear together, whole, or not at all (:class:`~chakra.fileio.AtomicGroup`):
    interrupted, it writes none (the ranks run in lock step: none is finished before all are)
    and says so.
    Raises :class:`FileAccessError` when ``out_dir`` cannot be written.
    """
    folder = Path(out_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FileAccessError(f"cannot create {folder}: {exc.strerror or exc}") from exc
    plan = plan_job(options)
    outputs: list[_RankOutputs] = []
    try:
        with AtomicGroup() as group:
            for rank in range(options.ranks):
                outputs.append(_RankOutputs(plan, rank, folder, group))
            engines = [RankEngine(plan, rank, outputs[rank]) for rank in range(options.ranks)]
            collectives = list(_run_lockstep(engines, TimeFormat(options.integer_timestamps)))
            for engine, output in zip(engines, outputs):
                output.commit(engine.now)
            job_path = folder / JOB_TRUTH_NAME
            with atomic_output(job_path, group=group) as job_file:
                write_job_truth(job_file, options, plan.groups, collectives)
    except BaseException as exc:
        for output in outputs:
            output.discard()
        if isinstance(exc, KeyboardInterrupt):  # Ctrl-C, SIGTERM
            logger.info("interrupted: no file written into %s (the ranks are generated "
                        "together, so none was finished)", folder)  # fmt: skip
        if isinstance(exc, OSError):
            raise FileAccessError(f"cannot write into {folder}: {exc.strerror or exc}") from exc
        raise
    summary = JobSummary(folder, job_path, _rank_summaries(engines, outputs), len(collectives))
    logger.info("wrote %d ranks, %d collectives to %s", options.ranks, len(collectives), folder)
    return summary


def _rank_summaries(engines: list[RankEngine], outputs: list[_RankOutputs]):
    return tuple(
        RankSummary(rank, *output.paths, **engine.counts)
        for rank, (engine, output) in enumerate(zip(engines, outputs))
    )


def _run_lockstep(engines: list[RankEngine], time: TimeFormat) -> Iterator[JobCollective]:
    """Run all ranks; yield each GPU collective once all its members have reached it (CPU
    collectives meet the same way and are not yielded)."""
    runners = [engine.run() for engine in engines]
    ready: deque[tuple[int, Optional[int]]] = deque((rank, None) for rank in range(len(runners)))
    waiting: dict[tuple[str, int], dict[int, CollectiveArrival]] = {}
    while ready:
        rank, resume = ready.popleft()
        try:
            arrival = runners[rank].send(resume)
        except StopIteration:
            continue
        members = waiting.setdefault(arrival.call.key, {})
        members[rank] = arrival
        if len(members) < len(arrival.call.ranks):
            continue
        del waiting[arrival.call.key]
        end = max(a.start_ns for a in members.values()) + arrival.call.transfer_ns
        for member in sorted(members):
            ready.append((member, end))
        if arrival.cpu:
            continue  # a gloo collective: no GPU op, not a job collective
        yield _job_collective(arrival.call, members, time.ts(end))
    if waiting:
        pending = ", ".join(f"pg {name} seq {seq}" for name, seq in sorted(waiting))
        raise SynthError(f"collectives never matched across ranks: {pending}")


def _job_collective(call, members: dict[int, CollectiveArrival], end_us) -> JobCollective:
    return JobCollective(
        pg_name=call.pg.name,
        seq=call.seq,
        kind=call.job_kind,
        bytes=call.nbytes,
        ranks=list(call.ranks),
        gpu_correlation_by_rank={str(r): members[r].correlation for r in sorted(members)},
        end_us=end_us,
    )
