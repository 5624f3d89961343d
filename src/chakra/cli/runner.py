"""What every command-line tool shares: logging set-up and turning errors into one line."""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from importlib import import_module
from types import FrameType
from typing import Any, Callable, Optional, TextIO

from chakra.errors import (
    ChakraError,
    InputsFailedError,
    Terminated,
    UsageError,
    read_every_input,
)

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def add_log_level_option(parser: argparse.ArgumentParser, default: str = "INFO") -> None:
    """``--log-level`` and ``--progress/--no-progress``; a subcommand's parser passes
    ``argparse.SUPPRESS`` so that the options are taken on either side of the subcommand
    without one overriding the other."""
    parser.add_argument(
        "--log-level",
        dest="log_level",
        default=default,
        type=str.upper,
        choices=LOG_LEVELS,
        help="how much to report on stderr (default: INFO)",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=argparse.SUPPRESS if default == argparse.SUPPRESS else None,
        help="progress bars on stderr (default: when stderr is a terminal); without them, "
        "long phases still log a line now and then at INFO",
    )


def run_tool(
    parser: argparse.ArgumentParser,
    action: Callable[[argparse.Namespace], None],
    argv: Optional[Sequence[str]] = None,
    libraries: Sequence[str] = (),
) -> int:
    """Parse ``argv``, configure logging, run ``action``; return the exit status.

    A :class:`ChakraError` becomes one line ``<prog>: error: <message>`` on stderr and status
    1 (a :class:`~chakra.errors.InputsFailedError`, one such line per input that failed);
    Ctrl-C gives status 130 and SIGTERM status 143, both after the same clean-up
    (:class:`~chakra.errors.Terminated` is a ``KeyboardInterrupt``: temporaries are removed,
    outputs not committed, worker processes ended). Argument errors exit with status 2:
    argparse's own, and a :class:`UsageError` the action raises (reported like argparse's,
    after the usage line). A reader that closes stdout early (``| head``) is no error: what
    the tool would still print is dropped, its work goes on (files written, errors
    reported), and the status is the work's, 0 when it succeeds
    (:func:`stdout_reader_may_leave`). The modules in ``libraries`` (what the action imports)
    load after the parse, before the action: ``--help`` loads none, and a signal while they
    load meets the early guard (:func:`chakra.cli.launch.install_guard`; an interrupted
    import of msgspec's or protobuf's extension crashed the process: status -11).
    """
    args = parser.parse_args(argv)
    for library in libraries:
        import_module(library)
    from chakra.progress import ConsoleHandler, choose_bars  # after --help: start-up

    logging.basicConfig(
        level=getattr(args, "log_level", "INFO"),
        format=f"{parser.prog}: %(levelname)s: %(message)s",
        handlers=[ConsoleHandler(sys.stderr)],  # its lines do not break progress bars
    )
    choose_bars(getattr(args, "progress", None))
    try:
        with sigterm_interrupts(), stdout_reader_may_leave():
            action(args)
            sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
    except BrokenPipeError:  # stdout written around sys.stdout (its binary buffer)
        _silence_stdout()
        return 0
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    except InputsFailedError as exc:
        for error in exc.errors:
            print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 1
    except ChakraError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 1
    except Terminated:
        print(f"{parser.prog}: terminated (SIGTERM)", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print(f"{parser.prog}: interrupted", file=sys.stderr)
        return 130
    finally:
        choose_bars(None)  # a tool run in-process (tests, notebooks) leaves no choice behind
    return 0


def each_input(paths: Sequence[str], check: Callable[[str], None]) -> None:
    """Run ``check`` on every path; raise :class:`~chakra.errors.InputsFailedError` with
    each path's error (one line each) when any failed, so that one run names them all."""
    read_every_input(paths, check)


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`~chakra.errors.Terminated` in the main thread,
    so it unwinds like Ctrl-C (Python's default for SIGTERM is to die on the spot, leaving
    temporaries), and Ctrl-C raises ``KeyboardInterrupt`` (also when the interpreter
    swallowed it in a ``__del__`` or weakref callback, or code caught it as another error
    and went on: raised when the block ends; or wrapped it in another exception: raised
    instead of that one; one that arrives during an import: raised once the import has
    ended, :class:`_DeferredStop`); after it, both handlers
    are as before (a console script's early guard, :func:`chakra.cli.launch.install_guard`). Only
    the main thread can set handlers: elsewhere the block runs as is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    swallowed: list[BaseException] = []
    unraisable_hook = sys.unraisablehook

    def keep_interrupts(unraisable: Any) -> None:
        # a signal that lands in a __del__ or weakref callback is "ignored" there by the
        # interpreter (a traceback, and the tool goes on): keep it to end the block with
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            swallowed.append(unraisable.exc_value)
        else:
            unraisable_hook(unraisable)

    arrived: list[int] = []
    deferred = _DeferredStop()

    def interrupt(signum: int, frame: Optional[FrameType]) -> None:
        arrived.append(signum)
        if not deferred.until_imported(signum, frame):
            _raise_stop(signum, frame)

    previous = {stop: signal.signal(stop, interrupt) for stop in (signal.SIGINT, signal.SIGTERM)}
    sys.unraisablehook = keep_interrupts
    try:
        yield
        if swallowed:
            raise swallowed[0]
        if arrived:  # caught on the way and turned into something handled (numpy's import
            # makes it an ImportError: the pipeline's plot said matplotlib was not installed)
            raise Terminated() if arrived[0] == signal.SIGTERM else KeyboardInterrupt()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        # the interpreter wraps what some code raised (a class body's __set_name__ gives a
        # RuntimeError; an import may give an ImportError): a signal is still a signal
        if arrived:
            raise (Terminated() if arrived[0] == signal.SIGTERM else KeyboardInterrupt()) from exc
        raise
    finally:
        deferred.end()
        sys.unraisablehook = unraisable_hook
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _raise_stop(signum: int, frame: Optional[FrameType]) -> None:
    (_raise_terminated if signum == signal.SIGTERM else signal.default_int_handler)(signum, frame)


#: Seconds between two looks at whether the import a signal arrived in has ended.
_IMPORT_RETRY_S = 0.005


def _importing(frame: Optional[FrameType]) -> bool:
    """Whether ``frame`` runs inside an import (the interpreter's import system is on the
    stack)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False


class _DeferredStop:
    """A stop signal that arrives while a module is being imported is raised once the
    import has ended (a timer looks every :data:`_IMPORT_RETRY_S`): raised inside it, it
    can cut short an extension module's set-up (numpy's, protobuf's, which import Python
    modules as they start), and the half-set-up module crashed the process (status -11,
    nothing printed). The timer (SIGALRM) is taken only while a signal waits, and given
    back after. Only where the platform has ``setitimer``; elsewhere never deferred."""

    def __init__(self) -> None:
        self.pending: Optional[int] = None
        self.available = hasattr(signal, "setitimer")
        self.previous: Any = None

    def end(self) -> None:
        """Drop a signal still waiting (the block is ending: it is raised there)."""
        if self.pending is not None:
            self._give_back()

    def until_imported(self, signum: int, frame: Optional[FrameType]) -> bool:
        """Defer ``signum`` when ``frame`` is importing; whether it was. A second signal
        while one waits is not deferred (an import that never ends cannot hold it)."""
        if self.pending is not None:
            self._give_back()
            return False
        if not self.available or not _importing(frame):
            return False
        self.pending = signum
        self.previous = signal.signal(signal.SIGALRM, self._look)
        signal.setitimer(signal.ITIMER_REAL, _IMPORT_RETRY_S)
        return True

    def _look(self, alarm: int, frame: Optional[FrameType]) -> None:
        if self.pending is None:
            return
        if _importing(frame):
            signal.setitimer(signal.ITIMER_REAL, _IMPORT_RETRY_S)
            return
        signum = self.pending
        self._give_back()
        _raise_stop(signum, frame)

    def _give_back(self) -> None:
        self.pending = None
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous)


@contextlib.contextmanager
def stdout_reader_may_leave() -> Iterator[None]:
    """Within the block, ``sys.stdout`` is a :class:`ReaderMayLeave` around the one before:
    once its reader has gone (``| head``), what is printed is dropped and the work goes
    on."""
    before = sys.stdout
    sys.stdout = ReaderMayLeave(before)
    try:
        yield
    finally:
        sys.stdout = before


class ReaderMayLeave:
    """A text stream that passes everything to ``stream`` until writing to it fails with a
    closed pipe; from then on it drops what it is given, and the file descriptor behind
    ``stream`` points at devnull (so that the interpreter's last flush succeeds)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                return self.stream.write(text)
            except BrokenPipeError:
                self._drop_from_now_on()
        return len(text)

    def flush(self) -> None:
        if self.reader_gone:
            with contextlib.suppress(OSError, ValueError):  # what was buffered, to devnull
                self.stream.flush()
            return
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._drop_from_now_on()

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding... of the stream
        return getattr(self.stream, name)

    def _drop_from_now_on(self) -> None:
        self.reader_gone = True
        _silence_stdout(self.stream)


def _raise_terminated(signum: int, frame: Optional[FrameType]) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM does not cut the clean-up
    raise Terminated()


def _silence_stdout(stream: Optional[TextIO] = None) -> None:
    """After a closed pipe: point stdout (``stream``, else ``sys.stdout``) at devnull, so
    that the interpreter's last flush does not fail again (the advice of the Python docs on
    SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, (stream or sys.stdout).fileno())
        os.close(devnull)
    except (OSError, ValueError, io.UnsupportedOperation):  # no file descriptor (captured)
        pass
