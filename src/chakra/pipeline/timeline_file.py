"""The pipeline's ``timeline.json``: which ranks and stretch of time it shows, and how it is
written. A timeline of every node of a big job is hundreds of MB, and Perfetto's UI loads a
JSON trace whole into the browser's memory, so by default it shows every rank up to
:data:`~chakra.views.job.ALL_RANKS_UP_TO`, else the slowest, median and fastest; it is
written gzip-compressed (``timeline.json.gz``, which Perfetto opens) above
:data:`GZIP_ABOVE_EVENTS` events, and a warning names the remedies when the file is still
over :data:`WARN_ABOVE_BYTES`."""

from __future__ import annotations

import contextlib
import functools
import logging
import queue
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Optional, Union

import msgspec

from chakra.errors import UsageError
from chakra.fileio import AtomicGroup, atomic_output
from chakra.fileio.location import Location, join
from chakra.ingest.json_input import dump_finite, gc_paused
from chakra.pipeline.option_values import TIMELINE_ALL, TIMELINE_AUTO
from chakra.simulate.sim_result import SimResult
from chakra.views.job import ALL_RANKS_UP_TO, JobSummary, shown_ranks
from chakra.views.timeline import chrome_trace
from chakra.views.timeline_window import TimeWindow, WindowChoice, resolve_window
from chakra.workers import forked

logger = logging.getLogger(__name__)
#: Its names in the output folder: plain, and compressed.
TIMELINE, TIMELINE_GZ = "timeline.json", "timeline.json.gz"
#: Above this many events (about 55 MB of JSON), the file is written gzip-compressed.
GZIP_ABOVE_EVENTS = 300_000
#: A timeline file above this size may not load in Perfetto's UI: a warning says so.
WARN_ABOVE_BYTES = 100 * 1000 * 1000


class TimelineOptions(msgspec.Struct, frozen=True):
    """``write`` False: no timeline. ``ranks``: :data:`TIMELINE_AUTO`, :data:`TIMELINE_ALL`
    or rank ids (sorted, each a rank of the job: :func:`checked_ranks`). ``window``: the
    stretch of time shown (None: all of it)."""

    write: bool = True
    ranks: Union[str, tuple[int, ...]] = TIMELINE_AUTO
    window: Optional[WindowChoice] = None


def checked_options(choice: Union[bool, TimelineOptions], ranks: Sequence[int]) -> TimelineOptions:
    """The timeline options of ``run_pipeline``'s ``timeline`` (True: the defaults, False:
    none), checked before any work against the job's ``ranks`` (UsageError)."""
    if isinstance(choice, bool):
        return TimelineOptions(write=choice)
    return msgspec.structs.replace(choice, ranks=checked_ranks(choice.ranks, ranks))


def checked_ranks(
    choice: Union[str, Sequence[int]], ranks: Sequence[int]
) -> Union[str, tuple[int, ...]]:
    """``--timeline-ranks`` checked: a word it knows, or ids of the job's ``ranks``, sorted
    (UsageError otherwise)."""
    if isinstance(choice, str):
        if choice not in (TIMELINE_AUTO, TIMELINE_ALL):
            raise UsageError(f"--timeline-ranks {choice!r}: 'auto', 'all' or rank ids")
        return choice
    unknown = sorted(set(choice) - set(ranks))
    if unknown or not choice:
        raise UsageError(f"--timeline-ranks: no rank {unknown[0]} in this job" if unknown
                         else "--timeline-ranks: no rank given")  # fmt: skip
    return tuple(sorted(set(choice)))


def timeline_ranks(
    options: TimelineOptions, job: Optional[JobSummary], rank_count: int
) -> Optional[tuple[int, ...]]:
    """The ranks the timeline shows (None: all); ``job`` None: before the job's summary,
    only when :func:`known_without_job`."""
    if options.ranks == TIMELINE_ALL:
        return None
    if options.ranks == TIMELINE_AUTO:
        if job is None and not known_without_job(options, rank_count):
            raise ValueError("timeline_ranks: the job's summary picks the ranks shown")
        return None if job is None else shown_ranks(job, rank_count)
    return tuple(options.ranks)


def known_without_job(options: TimelineOptions, rank_count: int) -> bool:
    """Whether the ranks the timeline shows are known before the job's summary (it picks
    the slowest, median and fastest only of a job above ALL_RANKS_UP_TO ranks)."""
    return options.ranks != TIMELINE_AUTO or rank_count <= ALL_RANKS_UP_TO


def ranks_known_shown(options: TimelineOptions, ranks: Sequence[int]) -> frozenset[int]:
    """The ranks of ``ranks`` the timeline will show, as far as the options tell before the
    replay (the slowest, median and fastest of a big job are known only after it)."""
    if not options.write or not known_without_job(options, len(ranks)):
        return frozenset()
    shown = timeline_ranks(options, None, len(ranks))
    return frozenset(ranks if shown is None else shown)


class _Overlapped:
    """A text stream whose writes reach ``out`` on a second thread, so that compressing a
    chunk (zlib lets go of the GIL) overlaps encoding the next one; at most two chunks
    wait. Counts the characters written; :meth:`close` waits for the last write and raises
    what a write raised."""

    def __init__(self, out: IO[str]) -> None:
        self.out, self.written = out, 0
        self._waiting: queue.Queue[Optional[str]] = queue.Queue(maxsize=2)
        self._failure: Optional[BaseException] = None
        self._writer = threading.Thread(target=self._drain, name="timeline-writer", daemon=True)
        self._writer.start()

    def write(self, text: str) -> int:
        if self._failure is not None:
            raise self._failure
        self.written += len(text)
        self._waiting.put(text)
        return len(text)

    def _drain(self) -> None:
        while (text := self._waiting.get()) is not None:
            if self._failure is None:
                try:
                    self.out.write(text)
                except BaseException as exc:  # re-raised on the caller's thread
                    self._failure = exc

    def close(self) -> None:
        self._waiting.put(None)
        self._writer.join()
        if self._failure is not None:
            raise self._failure


class _Written(msgspec.Struct, frozen=True):
    """A timeline file written: its name, events and characters of JSON."""

    name: str
    events: int
    chars: int


class _Plan(msgspec.Struct, frozen=True):
    """What the timeline shows: the ranks (by rank id, None: all) and the window."""

    ranks: Optional[tuple[int, ...]]
    window: Optional[TimeWindow]


def write_timeline(result: SimResult, folder: Location, options: TimelineOptions, job: JobSummary,
                   group: Optional[AtomicGroup] = None) -> Optional[Location]:  # fmt: skip
    """Write the timeline ``options`` ask for into ``folder`` (with ``group``: when it
    commits); its path, or None when ``options.write`` is False. A timeline an earlier run
    left under the other name (or any, when none is written) goes too."""
    plan = _plan(result, options, job, folder, group)
    if plan is None:
        return None
    return _warned(folder, _write(result, plan, folder, group))


@contextlib.contextmanager
def timeline_beside(
    result: SimResult, folder: Location, options: TimelineOptions, job: Optional[JobSummary],
    group: Optional[AtomicGroup] = None,
) -> Iterator[Callable[[], Optional[Location]]]:  # fmt: skip
    """:func:`write_timeline` in a forked process (:func:`chakra.workers.forked`) while the
    block runs; yields the function that waits for it and returns what it would (call it
    in the block). The timeline is the costliest view: this overlaps it with the others.
    ``job`` None: started before the job's summary (only when :func:`known_without_job`)."""
    plan = _plan(result, options, job, folder, group)
    if plan is None:
        yield lambda: None
        return
    with tempfile.TemporaryDirectory(prefix="chakra-timeline-") as scratch:
        written = functools.partial(_write, result, plan, Path(scratch), None)
        with forked(written) as future:

            def finish() -> Optional[Location]:
                done: _Written = future.result()
                path = join(folder, done.name)
                _obsolete([join(folder, _other(done.name))], group)
                _copy(Path(scratch) / done.name, path, group)
                return _warned(folder, done)

            yield finish


def _copy(source: Path, path: Location, group: Optional[AtomicGroup]) -> None:
    """``source``'s bytes as they are (compressed or not) into ``path``, atomically."""
    with source.open("rb") as raw, atomic_output(path, compress=False, group=group) as out:
        shutil.copyfileobj(raw, out)


def _plan(
    result: SimResult, options: TimelineOptions, job: Optional[JobSummary], folder: Location,
    group: Optional[AtomicGroup],
) -> Optional[_Plan]:  # fmt: skip
    """What the timeline shows, logged; None (an earlier timeline then goes) for none."""
    if not options.write:
        _obsolete([join(folder, TIMELINE), join(folder, TIMELINE_GZ)], group)
        return None
    count = len(result.graphs)
    shown = timeline_ranks(options, job, count)
    if shown is not None:
        why = "the slowest, median and fastest" if options.ranks == TIMELINE_AUTO else "as asked"
        logger.info("timeline: ranks %s of %d (%s; --timeline-ranks all shows every rank)",
                    ", ".join(map(str, shown)), count, why)  # fmt: skip
    positions = (
        None if shown is None else [r for r, g in enumerate(result.graphs) if g.rank in shown]
    )
    window = None if options.window is None else resolve_window(options.window, result, positions)
    return _Plan(shown, window)


def _other(name: str) -> str:
    return TIMELINE if name == TIMELINE_GZ else TIMELINE_GZ


def _write(
    result: SimResult, plan: _Plan, folder: Location, group: Optional[AtomicGroup]
) -> _Written:
    """Build the timeline and write it into ``folder``, compressed when it is big."""
    # hundreds of thousands of acyclic event dicts: collections would traverse them again
    # and again while they are built (a third of the build's time on 8 ranks x 4,000 ops)
    with gc_paused():
        document = chrome_trace(result, compare=True, ranks=plan.ranks, window=plan.window)
        events = len(document["traceEvents"])
        name = TIMELINE_GZ if events > GZIP_ABOVE_EVENTS else TIMELINE
        path = join(folder, name)
        _obsolete([join(folder, _other(name))], group)
        with atomic_output(path, text=True, group=group) as out:
            counting = _Overlapped(out)
            try:
                dump_finite(document, counting, path)  # type: ignore[arg-type]
            finally:
                counting.close()
    return _Written(name, events, counting.written)


def _warned(folder: Location, written: _Written) -> Location:
    """The timeline's path, after a warning when it is too big for Perfetto's UI."""
    if written.chars > WARN_ABOVE_BYTES:
        logger.warning("the timeline holds %d events (%d MB of JSON): Perfetto's UI may not load "
                       "it; --timeline-ranks, --timeline-window or --no-timeline make it smaller",
                       written.events, written.chars // 1000000)  # fmt: skip
    return join(folder, written.name)


def _obsolete(paths: Sequence[Location], group: Optional[AtomicGroup]) -> None:
    """Local files of an earlier run's timeline to remove: when ``group`` commits, or now."""
    for path in paths:
        if group is not None:
            group.obsolete(path)
        elif isinstance(path, Path):
            path.unlink(missing_ok=True)


def timeline_entry(result: SimResult, options: TimelineOptions, job: JobSummary) -> Any:
    """What report.json says of the timeline: the ranks shown (``"all"``) and the window."""
    shown = timeline_ranks(options, job, len(result.graphs)) if options.write else ()
    return {"ranks": TIMELINE_ALL if shown is None else list(shown),
            "window": msgspec.to_builtins(options.window)}  # fmt: skip
