"""Progress of the long phases of the tools: pairing, loading, linking, converting,
simulating, writing.

A phase shown logs a start line, then shows progress (a tqdm bar when bars are on: stderr
is a terminal, or ``--progress``, and this is the main process; else an INFO line at most
every :data:`LOG_EVERY_S` seconds), and an end line with the seconds it took. A phase
counts items (nodes, events), bytes of a file read as a stream, or named steps, or nothing
(:func:`activity`: its bar shows the time). It is shown for a big input (at least
:data:`MIN_ITEMS` items or :data:`MIN_BYTES` bytes) and, when bars are on, once it has
lasted :data:`SHOW_AFTER_S` seconds whatever its size; always only when the
``chakra.progress`` logger takes INFO lines (the CLIs' default; ``--log-level WARNING``
silences it). While a bar is open, a thread redraws it every :data:`TICK_S` seconds, so a
terminal never goes quiet for long. A silent phase costs nothing per item:
:meth:`Progress.tracked` hands the items back as they are. A shown one costs a clock read
per :data:`CHECK_EVERY` items: it hands the items on in chunks (``itertools``, in C), not
through a Python call per item.

Log lines do not break bars: :class:`ConsoleHandler` (the CLIs' handler) clears the bars,
writes the line and draws them again (tqdm's ``external_write_mode``, as
``tqdm.contrib.logging`` does); in a worker process (forked: it inherits the handler) it
clears the terminal's line before its own, and the main process draws its bar again on the
next line at its next tick.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, islice
from typing import Any, Optional, TypeVar

T = TypeVar("T")
logger = logging.getLogger(__name__)

#: Phases over fewer items stay silent.
MIN_ITEMS = 200_000
#: Phases over inputs of fewer bytes stay silent (about a second of loading).
MIN_BYTES = 64 << 20
#: Items between two looks at the clock.
CHECK_EVERY = 4096
#: Seconds between two log lines when stderr is not a terminal.
LOG_EVERY_S = 10.0
#: Seconds between two redraws of an open bar (its clock moves even when its count does not).
TICK_S = 1.0
#: Seconds after which a phase too small to be shown from its start is shown (bars on).
SHOW_AFTER_S = 1.0
#: ``unit`` of a phase that counts bytes (shown in MB), of one that counts steps, and of
#: one that counts nothing (its bar shows the time it has taken).
BYTES, STEPS, TIME = "bytes", "steps", "time"
_MB = 1e6
_END = object()


def megabytes(size: int) -> str:
    """``size`` bytes for a log line: ``"959 MB"`` (10^6 bytes)."""
    return f"{size / _MB:,.0f} MB"


_bars_chosen: Optional[bool] = None  # --progress (True), --no-progress (False), or None


def _in_main_process() -> bool:
    """Not a worker: a process that has not imported multiprocessing is none (start-up)."""
    processes = sys.modules.get("multiprocessing")
    return processes is None or processes.current_process().name == "MainProcess"


def choose_bars(bars: Optional[bool]) -> None:
    """Draw bars (``True``: ``--progress``), never (``False``: ``--no-progress``), or when
    stderr is a terminal (``None``, the default)."""
    global _bars_chosen
    _bars_chosen = bars


def bars_on() -> bool:
    """Whether this process draws progress bars: they are on (:func:`choose_bars`; by
    default on a terminal) and this is the main process (workers would draw over each
    other)."""
    return _in_main_process() and _interactive()


def _interactive() -> bool:
    """Whether someone watches: bars are on, or would be in the main process (a worker's
    phases then log their start line once they last :data:`SHOW_AFTER_S`)."""
    return sys.stderr.isatty() if _bars_chosen is None else _bars_chosen


class Progress:
    """One phase of a tool, ``what`` (``"loading host ET x.json"``): ``done`` of ``total``
    ``unit`` (items, :data:`BYTES` or :data:`STEPS`). Silent unless ``shown`` or, when bars
    are on, until it has lasted :data:`SHOW_AFTER_S`; a silent phase's methods do nothing
    but count. ``terminal`` overrides the check for bars (and a phase given it is never
    shown late)."""

    def __init__(
        self,
        what: str,
        shown: bool,
        *,
        total: int = 0,
        unit: str = "items",
        log_every_s: Optional[float] = None,
        terminal: Optional[bool] = None,
    ) -> None:
        self.what = what
        talking = logger.isEnabledFor(logging.INFO)
        self.shown = shown and talking
        self.total, self.unit, self.done = total, unit, 0
        self.log_every_s = LOG_EVERY_S if log_every_s is None else log_every_s
        bars = bars_on() if terminal is None else terminal
        self.terminal = talking and bars
        self._late = talking and not self.shown and terminal is None and _interactive()
        self._ended = False
        self._step, self._steps, self._detail = "", 0, ""
        self._bar: Any = None
        self._lock = threading.Lock()
        self._started = self._last = time.monotonic()

    def start(self, detail: str = "") -> Progress:
        """Log the start line, ``what (detail)`` (or keep it for when the phase is shown
        late); the ticker redraws the phase's bar from now on."""
        self._detail = detail
        self._started = self._last = time.monotonic()
        if self.shown:
            self._log_start()
        if (self.shown and self.terminal) or self._late:
            _ticker.watch(self)
        return self

    def _log_start(self) -> None:
        logger.info("%s (%s)" if self._detail else "%s%s", self.what, self._detail)

    def update(self, done: int) -> None:
        """``done`` units are done: move the bar, or log a line if it is time to."""
        if not self.shown:
            self.done = done
            return
        if self.terminal:
            with self._lock:
                if self._ended:
                    return
                bar = self._bar if self._bar is not None else self._open_bar()
                if self._step:
                    bar.set_postfix_str(self._step, refresh=False)
                bar.update(done - self.done)
        elif time.monotonic() - self._last >= self.log_every_s:
            self._last = time.monotonic()
            logger.info("%s: %s", self.what, self._state(done))
        self.done = done

    def step(self, name: str) -> None:
        """The next of ``total`` steps begins, ``name`` (``"breaking cycles"``); the first
        call begins step 1."""
        self._step, self._steps = name, self._steps + 1
        self.update(self._steps - 1)

    def tick(self) -> None:
        """From the ticker: show a phase that has lasted :data:`SHOW_AFTER_S` (its start
        line, then a bar), and redraw its bar (the clock moves)."""
        with self._lock:
            if self._ended:
                return
            if self._late and time.monotonic() - self._started >= SHOW_AFTER_S:
                self._late, self.shown = False, True
                self._log_start()
            if not (self.shown and self.terminal):
                return
            bar = self._bar if self._bar is not None else self._open_bar()
            if self._step:
                bar.set_postfix_str(self._step, refresh=False)
            bar.n = self.done
            bar.refresh()

    def tracked(
        self,
        items: Iterable[T],
        total: Optional[int] = None,
        unit: Optional[str] = None,
        position: Optional[Callable[[], int]] = None,
        finish: bool = False,
    ) -> Iterator[T]:
        """``items`` unchanged, counted against ``total`` ``unit`` (when given, they replace
        the phase's) every :data:`CHECK_EVERY` items; ``position``, when given, says how far
        the phase is instead of the count (a stream's byte offset). ``finish``: end the phase
        when the items are exhausted. A silent phase returns ``items``' own iterator."""
        if not (self.shown or self._late):
            return iter(items)
        if (total, unit) != (None, None):
            self._drop_bar()  # drawn for other units: the next update or tick draws anew
        self.total = self.total if total is None else total
        self.unit = self.unit if unit is None else unit
        return chain.from_iterable(self._chunks(iter(items), position, finish))

    def _chunks(
        self, items: Iterator[T], position: Optional[Callable[[], int]], finish: bool
    ) -> Iterator[Iterable[T]]:
        """``items`` in chunks of :data:`CHECK_EVERY`, each drawn only once the one before
        is used up (no reading ahead), with an update before each."""
        count, every, first = 0, CHECK_EVERY, None
        try:
            while True:
                first = next(items, _END)
                if first is _END:
                    break
                self.update(position() if position is not None else count)
                yield (first,)
                yield islice(items, every - 1)
                count += every
        finally:  # exhausted, or closed by a consumer that stopped (an error, a break)
            if finish and first is _END:
                self.finish()
            elif finish:
                self.close()
            else:  # the phase goes on
                self._drop_bar()

    def finish(self) -> None:
        """The phase is over: remove the bar and log ``what: done in S s``."""
        self.close()
        if self.shown:
            logger.info("%s: done in %.1f s", self.what, time.monotonic() - self._started)
            self.shown = False

    def close(self) -> None:
        """Remove the bar, if any (the phase failed or was abandoned: no end line)."""
        _ticker.forget(self)
        with self._lock:
            self._late, self._ended = False, True
        self._drop_bar()

    def _drop_bar(self) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None

    def _state(self, done: int) -> str:
        if self.unit == STEPS:
            return f"step {done + 1} of {self.total}: {self._step}"
        share = f" ({100.0 * done / self.total:.0f}%)" if self.total > 0 else ""
        if self.unit == BYTES:
            return f"{done / _MB:,.0f} of {megabytes(self.total)}{share}"
        return f"{done:,} of {self.total:,} {self.unit}{share}"

    def _open_bar(self) -> Any:
        from tqdm import tqdm

        options: dict[str, Any] = {"unit": f" {self.unit}"}
        if self.unit == BYTES:
            options = {"unit": "B", "unit_scale": True, "unit_divisor": 1024}
        elif self.unit == TIME or not (self.total or self.done):  # nothing counted yet
            options = {"bar_format": "{desc} [{elapsed}]"}
        self._bar = tqdm(total=self.total or None, desc=self.what, file=sys.stderr,
                         leave=False, initial=self.done, **options)  # fmt: skip
        self._bar.start_t -= time.monotonic() - self._started  # the phase's time, not the bar's
        return self._bar


class _Ticker:
    """The thread that calls :meth:`Progress.tick` on the watched phases every
    :data:`TICK_S` seconds; started by the first phase watched in a process."""

    def __init__(self) -> None:
        self._watched: list[Progress] = []
        self._lock = threading.Lock()
        self._pid = 0  # the process whose thread runs (a forked child starts its own)

    def watch(self, progress: Progress) -> None:
        with self._lock:
            self._watched.append(progress)
            if self._pid != os.getpid():
                self._pid = os.getpid()
                threading.Thread(target=self._run, name="progress-ticker", daemon=True).start()

    def forget(self, progress: Progress) -> None:
        with self._lock:
            if progress in self._watched:
                self._watched.remove(progress)

    def _run(self) -> None:
        while True:
            time.sleep(TICK_S)
            with self._lock:
                watched = list(self._watched)
            for progress in watched:
                progress.tick()

    def after_fork(self) -> None:
        self._watched, self._lock, self._pid = [], threading.Lock(), 0


_ticker = _Ticker()
os.register_at_fork(after_in_child=_ticker.after_fork)


@contextlib.contextmanager
def phase(
    what: str,
    size: int,
    *,
    in_bytes: bool = False,
    detail: str = "",
    total: int = 0,
    unit: str = "items",
    log_every_s: Optional[float] = None,
    terminal: Optional[bool] = None,
) -> Iterator[Progress]:
    """A :class:`Progress` over the ``with`` block, shown for an input of ``size`` items
    (at least :data:`MIN_ITEMS`) or, ``in_bytes``, bytes (:data:`MIN_BYTES`): its start
    line ``what (detail)`` on entry (``detail`` defaults to the size in MB when in bytes),
    its end line when the block ends normally (an exception only removes the bar)."""
    shown = size >= (MIN_BYTES if in_bytes else MIN_ITEMS)
    detail = detail or (megabytes(size) if in_bytes else "")
    progress = Progress(
        what, shown, total=total, unit=unit, log_every_s=log_every_s, terminal=terminal
    ).start(detail)
    try:
        yield progress
    except BaseException:
        progress.close()
        raise
    progress.finish()


def reading(items: Iterable[T], stream: Any, what: str) -> Iterator[T]:
    """``items`` parsed from ``stream`` as it is read (a file, or a ``GzipFile`` over one),
    as a phase of its own counted in bytes of the file as stored: shown when it holds at
    least :data:`MIN_BYTES`, ended when the items are. ``items``' own iterator for a small
    file or a stream that is not a local file (a URL)."""
    raw = getattr(stream, "fileobj", stream)  # a GzipFile's own file
    try:
        size = os.fstat(raw.fileno()).st_size
    except (AttributeError, OSError, ValueError):
        return iter(items)
    progress = Progress(what, size >= MIN_BYTES, total=size, unit=BYTES).start(megabytes(size))
    return progress.tracked(items, position=raw.tell, finish=True)


def tracked(
    items: Iterable[T],
    total: int,
    what: str,
    *,
    unit: str = "items",
    min_items: Optional[int] = None,
    log_every_s: Optional[float] = None,
    terminal: Optional[bool] = None,
) -> Iterator[T]:
    """``items`` (``total`` of them) unchanged, as a phase of its own: ``what (N unit)`` when
    they begin, ``what: N of TOTAL unit (P%)`` now and then or a bar, ``what: done in S s``
    once they are exhausted; silent for fewer than ``min_items`` (default
    :data:`MIN_ITEMS`)."""
    least = MIN_ITEMS if min_items is None else min_items
    progress = Progress(
        what, total >= least, total=total, unit=unit, log_every_s=log_every_s, terminal=terminal
    ).start(f"{total:,} {unit}")
    return progress.tracked(items, finish=True)


def activity(what: str, detail: str = "") -> contextlib.AbstractContextManager[Progress]:
    """A phase that counts nothing (writing a view, pairing traces): silent, unless bars
    are on and it lasts :data:`SHOW_AFTER_S`; then ``what (detail)``, a bar showing the
    time, and ``what: done in S s``."""
    return phase(what, 0, detail=detail, unit=TIME)


#: Clears a terminal's line and puts the cursor at its start.
CLEAR_LINE = "\r\x1b[K"


class ConsoleHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler writing to stderr (or ``stream``) whose lines do not break progress bars:
    with bars drawn, it clears them, writes the line and draws them again; in a worker
    process writing to a terminal, its lines begin by clearing the line (a bar of the main
    process may be on it)."""

    def __init__(self, stream: Any = None) -> None:
        super().__init__(stream if stream is not None else sys.stderr)

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if _in_main_process():
            return text
        bars = _bars_chosen
        if bars is None:
            bars = bool(getattr(self.stream, "isatty", lambda: False)())
        return CLEAR_LINE + text if bars else text

    def emit(self, record: logging.LogRecord) -> None:
        tqdm_module = sys.modules.get("tqdm")
        if tqdm_module is None or not getattr(tqdm_module.tqdm, "_instances", None):
            super().emit(record)
            return
        with tqdm_module.tqdm.external_write_mode(file=self.stream):
            super().emit(record)
