"""What every command-line tool shares: logging set-up and turning errors into one line."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Any, Callable, Optional

from chakra.errors import ChakraError, Terminated, UsageError
from chakra.progress import ConsoleHandler, choose_bars

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
) -> int:
    """Parse ``argv``, configure logging, run ``action``; return the exit status.

    A :class:`ChakraError` becomes one line ``<prog>: error: <message>`` on stderr and status
    1; Ctrl-C gives status 130 and SIGTERM status 143, both after the same clean-up
    (:class:`~chakra.errors.Terminated` is a ``KeyboardInterrupt``: temporaries are removed,
    outputs not committed, worker processes ended). Argument errors exit with status 2:
    argparse's own, and a :class:`UsageError` the action raises (reported like argparse's,
    after the usage line). A reader that closes stdout early (``| head``) ends the tool
    quietly with status 1.
    """
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(args, "log_level", "INFO"),
        format=f"{parser.prog}: %(levelname)s: %(message)s",
        handlers=[ConsoleHandler(sys.stderr)],  # its lines do not break progress bars
    )
    choose_bars(getattr(args, "progress", None))
    try:
        with sigterm_interrupts():
            action(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
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


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`~chakra.errors.Terminated` in the main thread,
    so it unwinds like Ctrl-C (Python's default for SIGTERM is to die on the spot, leaving
    temporaries), and Ctrl-C raises ``KeyboardInterrupt`` (also when the interpreter
    swallowed it in a ``__del__`` or weakref callback: raised when the block ends); after it,
    both handlers are as
    before (a console script's early guard, :func:`chakra.cli.launch.install_guard`). Only
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

    previous = {
        signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
        signal.SIGTERM: signal.signal(signal.SIGTERM, _raise_terminated),
    }
    sys.unraisablehook = keep_interrupts
    try:
        yield
        if swallowed:
            raise swallowed[0]
    finally:
        sys.unraisablehook = unraisable_hook
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _raise_terminated(signum: int, frame: Optional[FrameType]) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM does not cut the clean-up
    raise Terminated()


def _silence_stdout() -> None:
    """After a closed pipe: point stdout at devnull, so that the interpreter's last flush
    does not fail again (the advice of the Python docs on SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor behind stdout (tests capture it)
        pass
