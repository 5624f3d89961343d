"""Progress of the long phases of the tools: loading, linking, converting, simulating and
writing big inputs.

A phase shown logs a start line, then shows progress (a tqdm bar when stderr is a terminal
and this is the main process, else an INFO line at most every :data:`LOG_EVERY_S` seconds),
and an end line with the seconds it took. A phase counts items (nodes, events), bytes of a
file read as a stream, or named steps. It is shown only for a big input (at least
:data:`MIN_ITEMS` items or :data:`MIN_BYTES` bytes) and when the ``chakra.progress`` logger
takes INFO lines (the CLIs' default; ``--log-level WARNING`` silences it). A silent phase
costs nothing per item: :meth:`Progress.tracked` hands the items back as they are. A shown
one costs a clock read per :data:`CHECK_EVERY` items: it hands the items on in chunks
(``itertools``, in C), not through a Python call per item.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import sys
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
#: ``unit`` of a phase that counts bytes (shown in MB) and of one that counts steps.
BYTES, STEPS = "bytes", "steps"
_MB = 1e6
_END = object()


def megabytes(size: int) -> str:
    """``size`` bytes for a log line: ``"959 MB"`` (10^6 bytes)."""
    return f"{size / _MB:,.0f} MB"


def _on_terminal() -> bool:
    """Whether a bar can be drawn: stderr is a terminal, and this is the main process
    (the workers of a pool would draw over each other)."""
    return multiprocessing.current_process().name == "MainProcess" and sys.stderr.isatty()


class Progress:
    """One phase of a tool, ``what`` (``"loading host ET x.json"``): ``done`` of ``total``
    ``unit`` (items, :data:`BYTES` or :data:`STEPS`). Silent unless ``shown``; a silent
    phase's methods do nothing. ``terminal`` overrides the check for a terminal."""

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
        self.shown = shown and logger.isEnabledFor(logging.INFO)
        self.total, self.unit, self.done = total, unit, 0
        self.log_every_s = LOG_EVERY_S if log_every_s is None else log_every_s
        self.terminal = self.shown and (_on_terminal() if terminal is None else terminal)
        self._step, self._steps = "", 0
        self._bar: Any = None
        self._started = self._last = time.monotonic()

    def start(self, detail: str = "") -> Progress:
        """Log the start line, ``what (detail)``."""
        if self.shown:
            logger.info("%s (%s)" if detail else "%s%s", self.what, detail)
            self._started = self._last = time.monotonic()
        return self

    def update(self, done: int) -> None:
        """``done`` units are done: move the bar, or log a line if it is time to."""
        if not self.shown:
            return
        if self.terminal:
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
        if self.shown:
            self._step, self._steps = name, self._steps + 1
            self.update(self._steps - 1)

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
        if not self.shown:
            return iter(items)
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
            else:
                self.close()

    def finish(self) -> None:
        """The phase is over: remove the bar and log ``what: done in S s``."""
        if self.shown:
            self.close()
            logger.info("%s: done in %.1f s", self.what, time.monotonic() - self._started)
            self.shown = False

    def close(self) -> None:
        """Remove the bar, if any (the phase failed or was abandoned: no end line)."""
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
        self._bar = tqdm(
            total=self.total or None, desc=self.what, file=sys.stderr, leave=False, **options
        )
        return self._bar


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
