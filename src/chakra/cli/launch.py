"""The console scripts (pyproject's ``[project.scripts]``): each sets the early signal guard,
then imports its tool and runs it.

From a tool's first line to its exit, Ctrl-C and SIGTERM end it with one line on stderr and
status 130 or 143, never a traceback. Before the tool's work begins (its imports, which
take up to a second, and argument parsing) and after it ends, the guard below ends the
process at once: nothing is written yet, or everything is. A tool interrupted during its
work ends at once too, once its clean-up is done (:func:`_exit_at_once`). During the work
(:func:`chakra.cli.runner.run_tool`'s action), the signals unwind as
``KeyboardInterrupt`` and :class:`~chakra.errors.Terminated` instead, so that temporaries
are removed and worker processes ended, and then the guard is back.

This module imports nothing heavy (only what the interpreter has loaded at start-up), so
that the guard is set within milliseconds of the start.
"""

from __future__ import annotations

import os
import signal
import sys
from importlib import import_module

from chakra import TYPE_CHECKING

if TYPE_CHECKING:  # not typing itself: the guard is set before any import that takes time
    from types import FrameType
    from typing import Optional

_prog = "chakra"  # the running tool's name, for the guard's line


def chakra_converter() -> None:
    _launch("chakra_converter", "chakra.cli.converter")


def chakra_diff() -> None:
    _launch("chakra_diff", "chakra.cli.diff")


def chakra_generator() -> None:
    _launch("chakra_generator", "chakra.cli.generator")


def chakra_jsonizer() -> None:
    _launch("chakra_jsonizer", "chakra.cli.jsonizer")


def chakra_pipeline() -> None:
    _launch("chakra_pipeline", "chakra.cli.pipeline")


def chakra_sim() -> None:
    _launch("chakra_sim", "chakra.cli.sim")


def chakra_synth() -> None:
    _launch("chakra_synth", "chakra.cli.synth")


def chakra_timeline_visualizer() -> None:
    _launch("chakra_timeline_visualizer", "chakra.cli.timeline_visualizer")


def chakra_trace_info() -> None:
    _launch("chakra_trace_info", "chakra.cli.trace_info")


def chakra_trace_link() -> None:
    _launch("chakra_trace_link", "chakra.cli.trace_link")


def chakra_validate() -> None:
    _launch("chakra_validate", "chakra.cli.validate")


def chakra_visualizer() -> None:
    _launch("chakra_visualizer", "chakra.cli.visualizer")


def _launch(prog: str, module: str) -> None:
    """Set the guard for ``prog``, then import ``module`` and run its ``main`` (which exits)."""
    install_guard(prog)
    import atexit

    atexit.register(_ignore_late_signals)  # the first registered: the last to run
    try:
        import_module(module).main()
    except SystemExit as exc:
        if exc.code in (128 + signal.SIGINT, 128 + signal.SIGTERM):
            _exit_at_once(exc.code)
        raise


def _exit_at_once(status: int) -> None:
    """End a tool that a signal interrupted, its clean-up done, without the interpreter's
    finalization: a signal that cut short the import of an extension module (numpy,
    protobuf, matplotlib load lazily) left it half set up, and freeing it crashed the
    finished process ("Fatal Python error: PyThreadState_Get", status -6)."""
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, signal.SIG_IGN)
    _flush_printed()
    os._exit(status)


def _flush_printed() -> None:
    """Flush what was printed before the process ends at once (``os._exit``)."""
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 - not contextlib.suppress: this module loads nothing slow
            stream.flush()
        except (OSError, RuntimeError, ValueError):  # closed, mid-write
            pass


def _ignore_late_signals() -> None:
    """The last exit handler: SIGINT and SIGTERM are ignored from here to the end. The
    interpreter resets a signal with a Python handler to its default action once the exit
    handlers have run, before it frees the modules and their objects (tens of ms after a
    tool that loaded numpy); a signal in that time killed a tool that had done its work and
    printed its last line (status -2 or -15). The process now ends with its own status."""
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, signal.SIG_IGN)


def install_guard(prog: str) -> None:
    """From here on, SIGINT and SIGTERM end the process at once with one line naming
    ``prog`` and status 128 + the signal's number (130, 143); a tool's action replaces
    the guard while it runs (:func:`chakra.cli.runner.sigterm_interrupts`)."""
    global _prog
    _prog = prog
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, _end_quietly)


def _end_quietly(signum: int, frame: Optional[FrameType]) -> None:
    """The guard: one line, and exit at once (``os._exit``: a handler that raised could land
    in a ``finally`` or a ``__del__`` and be printed, or be swallowed)."""
    what = "terminated (SIGTERM)" if signum == signal.SIGTERM else "interrupted"
    _flush_printed()  # what was printed before the signal
    try:  # noqa: SIM105
        os.write(2, f"{_prog}: {what}\n".encode())
    except OSError:
        pass
    os._exit(128 + signum)
