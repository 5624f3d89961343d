"""Run a tool and record what it did: status, signal, stdout, stderr, wall time, peak RSS.

:func:`run_tool` runs ``python -m chakra.cli.<module>`` in a subprocess: what a user sees,
with the child's peak RSS (from ``wait4``) and wall time. :func:`fork_tool` runs the tool's
``main`` in a forked copy of this process, which skips the interpreter's start-up (tens of
times the throughput when fuzzing; its peak RSS counts the parent's pages and means
nothing). Both see tracebacks (printed as the interpreter would), signals and hangs alike,
and kill the tool's whole process group after the time-out. :func:`run_tool` can also
stop the tool early (``signal_after_s``: Ctrl-C's SIGINT to its process group, or SIGTERM to
the tool), running it as its console script does (:mod:`chakra.cli.launch`), so that the
signal may land in its imports and argument parsing too.
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import logging
import os
import resource
import runpy
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

REPO_ROOT = Path(__file__).resolve().parents[2]
SRC = REPO_ROOT / "src"
#: a memory ceiling for every child (address space): a safety net against a bomb taking the
#: machine down, far above what Python + numpy + matplotlib reserve; peak RSS is measured.
DEFAULT_ADDRESS_SPACE = 8 << 30
DEFAULT_TIMEOUT_S = 60.0
LOG_LEVEL_NAMES = ("DEBUG", "INFO", "WARNING")


def prog_of(module: str) -> str:
    """The name a tool reports errors under: ``converter`` -> ``chakra_converter``; a script
    path -> its name without ``.py`` (``ci_tools/integration_tests.py``: ``integration_tests``)."""
    if module.endswith(".py"):
        return Path(module).stem
    return f"chakra_{module}"


def _command(module: str, argv: Sequence[str], *, started_fd: Optional[int] = None) -> list[str]:
    """The command line of a tool: ``python -m chakra.cli.<module>``; with ``started_fd``,
    what its console script runs (``chakra.cli.launch.chakra_<module>``: the early signal
    guard first, then the tool's imports), after closing ``started_fd`` (the write end of a
    pipe: the parent sees the script's first line begin)."""
    if module.endswith(".py"):
        return [sys.executable, str(REPO_ROOT / module), *argv]
    if started_fd is not None:
        entry = f"chakra_{module}"
        code = (f"import re, sys, os; os.close({started_fd}); "  # pip's wrapper, a mark
                f"from chakra.cli.launch import {entry}; sys.argv[0] = {entry!r}; "
                f"sys.exit({entry}())")  # fmt: skip
        return [sys.executable, "-c", code, *argv]
    return [sys.executable, "-m", f"chakra.cli.{module}", *argv]


def tool_env(extra: Optional[dict[str, str]] = None) -> dict[str, str]:
    """The environment of a tool: this checkout's ``src`` first on the path, no colour, no
    display, no progress bars."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    env["MPLBACKEND"] = "Agg"
    env.pop("PYTHONFAULTHANDLER", None)
    env.pop("PYTHONWARNINGS", None)
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class RunResult:
    """What one run of a tool did. ``signal`` is set when a signal ended it (ours, after a
    time-out, or its own, e.g. 11 for a segfault); ``returncode`` is then None."""

    module: str
    argv: tuple[str, ...]
    returncode: Optional[int]
    signal: Optional[int]
    stdout: str
    stderr: str
    wall_s: float
    peak_rss_bytes: int
    timed_out: bool
    cwd: Optional[str] = None
    #: the signal the runner sent to stop the tool early (``signal_after_s``), when it did
    #: (not when the tool had already ended)
    sent_signal: Optional[int] = None

    @property
    def prog(self) -> str:
        return prog_of(self.module)

    def command_line(self) -> str:
        return " ".join([self.prog, *self.argv])


def _limit_memory(address_space: Optional[int]) -> Callable[[], None]:
    def apply() -> None:
        if address_space:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


@dataclass(frozen=True)
class EarlyStop:
    """A signal to send ``after_s`` seconds after the start of the tool's console script
    (its first line, not the interpreter's start-up before it, which no program's code can
    guard): SIGINT to its process group (a terminal's Ctrl-C), SIGTERM to the tool alone
    (``kill``, ``timeout``)."""

    after_s: float
    signal_number: int = signal.SIGINT

    def send(self, pid: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            if self.signal_number == signal.SIGINT:
                os.killpg(pid, self.signal_number)
            else:
                os.kill(pid, self.signal_number)


#: How long after a console script's first line its guard may still be unset: the line
#: imports the package (``chakra/__init__``, then the launcher, a few ms) before the guard
#: can be set. A signal due in that time waits for the guard (up to this), so that a run
#: is judged on what the package can guard; a tool whose guard is not set by then gets
#: the signal anyway (its handlers come only after imports and parsing: 0.3 s and more).
GUARD_GRACE_S = 0.025


def _guard_set(pid: int) -> bool:
    """Whether the process ``pid`` catches SIGTERM (``/proc``'s ``SigCgt``): the guard of
    :mod:`chakra.cli.launch` sets both signals' handlers; Python catches neither SIGTERM
    nor, before its start-up ends, SIGINT. True where ``/proc`` cannot tell."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return True


def _closed(fd: int) -> bool:
    """Whether the other end of the pipe ``fd`` (non-blocking) is closed."""
    try:
        return os.read(fd, 1) == b""
    except BlockingIOError:
        return False


def _wait(
    pid: int,
    timeout_s: float,
    stop: Optional[EarlyStop] = None,
    started_fd: Optional[int] = None,
) -> tuple[int, resource.struct_rusage, bool, Optional[int]]:
    """Wait for ``pid`` (its own process group), killing the group after ``timeout_s``;
    with ``stop``, send its signal ``stop.after_s`` after the script's start (the other end
    of ``started_fd`` closed). Return the wait status, resource usage, whether it timed out
    and the signal sent (None when the tool ended before)."""
    deadline = time.monotonic() + timeout_s
    pause = 0.002
    timed_out = False
    sent: Optional[int] = None
    started: Optional[float] = None
    while True:
        waited, status, usage = os.wait4(pid, os.WNOHANG)
        if waited == pid:
            break
        if stop is not None and started is None and started_fd is not None and _closed(started_fd):
            started = time.monotonic()
        since = time.monotonic() - started if started is not None else -1.0
        due = stop is not None and sent is None and 0 <= stop.after_s <= since
        if due and (since >= GUARD_GRACE_S or _guard_set(pid)):
            stop.send(pid)  # type: ignore[union-attr]
            sent = stop.signal_number  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            break
        time.sleep(pause)
        pause = min(pause * 1.5, 0.05 if stop is None or sent is not None else 0.002)
    with contextlib.suppress(ProcessLookupError):  # what the tool started and left behind
        os.killpg(pid, signal.SIGKILL)
    return status, usage, timed_out, sent


def _result(
    module: str,
    argv: Sequence[str],
    status: int,
    usage: resource.struct_rusage,
    timed_out: bool,
    out: Path,
    err: Path,
    wall_s: float,
    cwd: Optional[Path],
    sent: Optional[int] = None,
) -> RunResult:
    code = os.waitstatus_to_exitcode(status)
    read = lambda p: p.read_bytes().decode("utf-8", "backslashreplace")  # noqa: E731
    return RunResult(
        module=module,
        argv=tuple(argv),
        returncode=code if code >= 0 else None,
        signal=-code if code < 0 else None,
        stdout=read(out),
        stderr=read(err),
        wall_s=wall_s,
        peak_rss_bytes=usage.ru_maxrss * 1024,
        timed_out=timed_out,
        cwd=None if cwd is None else str(cwd),
        sent_signal=sent,
    )


def run_tool(
    module: str,
    argv: Sequence[str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    cwd: Optional[Path] = None,
    address_space: Optional[int] = DEFAULT_ADDRESS_SPACE,
    env: Optional[dict[str, str]] = None,
    stop: Optional[EarlyStop] = None,
) -> RunResult:
    """Run ``python -m chakra.cli.<module> *argv`` (or the script ``module``, a path ending
    in ``.py`` relative to the repository) in its own session, with stdin empty; kill it and
    everything it started after ``timeout_s``. With ``stop``, run it as its console script
    does and send ``stop``'s signal that long after the start (once the script's first line
    has set its guard)."""
    with tempfile.TemporaryDirectory(prefix="chakra-fuzz-run-") as scratch:
        out, err = Path(scratch, "stdout"), Path(scratch, "stderr")
        if stop is None:
            status, usage, timed_out, sent, wall = _spawn(
                _command(module, argv), out, err, cwd, address_space, env, timeout_s
            )
        else:  # the script closes the pipe's write end at its first line: the start
            started_r, started_w = os.pipe()
            try:
                os.set_blocking(started_r, False)
                command = _command(module, argv, started_fd=started_w)
                status, usage, timed_out, sent, wall = _spawn(
                    command, out, err, cwd, address_space, env, timeout_s, stop,
                    (started_r, started_w),
                )  # fmt: skip
            finally:
                os.close(started_r)
        return _result(module, argv, status, usage, timed_out, out, err, wall, cwd, sent)


def _spawn(
    command: list[str],
    out: Path,
    err: Path,
    cwd: Optional[Path],
    address_space: Optional[int],
    env: Optional[dict[str, str]],
    timeout_s: float,
    stop: Optional[EarlyStop] = None,
    started_pipe: Optional[tuple[int, int]] = None,
) -> tuple[int, resource.struct_rusage, bool, Optional[int], float]:
    """Start ``command`` and wait for it (:func:`_wait`); the write end of ``started_pipe``
    goes to the child alone (closed here once it is started)."""
    import subprocess

    with out.open("wb") as out_f, err.open("wb") as err_f:
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                command,
                pass_fds=() if started_pipe is None else (started_pipe[1],),
                stdin=subprocess.DEVNULL,
                stdout=out_f,
                stderr=err_f,
                cwd=cwd,
                env=tool_env(env),
                start_new_session=True,
                preexec_fn=_limit_memory(address_space),
            )
        finally:
            if started_pipe is not None:
                os.close(started_pipe[1])
        started_fd = None if started_pipe is None else started_pipe[0]
        status, usage, timed_out, sent = _wait(proc.pid, timeout_s, stop, started_fd)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        return status, usage, timed_out, sent, time.monotonic() - start


def fork_tool(
    module: str,
    argv: Sequence[str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    cwd: Optional[Path] = None,
    address_space: Optional[int] = DEFAULT_ADDRESS_SPACE,
    env: Optional[dict[str, str]] = None,
) -> RunResult:
    """As :func:`run_tool`, but in a forked copy of this process calling the tool's ``main``:
    an exception that escapes it is printed as the interpreter prints it (status 1), a
    signal ends the child as it would a fresh interpreter. Import the tool's module before
    forking many times (:func:`preload`) to save its import in every child."""
    with tempfile.TemporaryDirectory(prefix="chakra-fuzz-fork-") as scratch:
        out, err = Path(scratch, "stdout"), Path(scratch, "stderr")
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            _child(module, argv, out, err, cwd, address_space, env)
        status, usage, timed_out, _ = _wait(pid, timeout_s)
        wall = time.monotonic() - start
        return _result(module, argv, status, usage, timed_out, out, err, wall, cwd)


def preload(modules: Iterable[str]) -> None:
    """Import the tools' modules (and what they import lazily) once, before forking."""
    for module in modules:
        if not module.endswith(".py"):
            importlib.import_module(f"chakra.cli.{module}")
    for lazy in ("chakra.text", "chakra.et.graph_checks", "chakra.simulate.analysis",
                 "chakra.ranks.files", "chakra.views.plot", "chakra.simulate.run",
                 "chakra.simulate.untimed", "chakra.tools.validate_files"):  # fmt: skip
        importlib.import_module(lazy)


def _child(
    module: str,
    argv: Sequence[str],
    out: Path,
    err: Path,
    cwd: Optional[Path],
    address_space: Optional[int],
    env: Optional[dict[str, str]],
) -> None:  # pragma: no cover - runs in the forked child
    code = 1
    try:
        os.setsid()
        _limit_memory(address_space)()
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                                (1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                (2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):  # fmt: skip
            opened = os.open(path, flags, 0o600)
            os.dup2(opened, fd)
            os.close(opened)
        faulthandler.disable()
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGALRM):
            signal.signal(number, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as the interpreter sets it
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", closefd=False, encoding="utf-8")  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False, encoding="utf-8", errors="backslashreplace")  # noqa: SIM115
        sys.__stdout__, sys.__stderr__ = sys.stdout, sys.stderr
        logging.root.handlers.clear()
        logging.root.setLevel(logging.WARNING)
        warnings.resetwarnings()
        warnings.showwarning = warnings._showwarning_orig  # type: ignore[attr-defined]
        for category in (
            DeprecationWarning,
            PendingDeprecationWarning,
            ImportWarning,
            ResourceWarning,
        ):  # the interpreter's default filters
            warnings.simplefilter("ignore", category)
        os.environ.update({"MPLBACKEND": "Agg", **(env or {})})
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = [module, *argv]
        code = _call_main(module, argv)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
        with contextlib.suppress(BaseException):
            sys.stderr.flush()
        os._exit(code)


def _call_main(module: str, argv: Sequence[str]) -> int:  # pragma: no cover - in the child
    """Run the tool as ``python -m``/``python script`` would, returning the exit status."""
    try:
        if module.endswith(".py"):
            runpy.run_path(str(REPO_ROOT / module), run_name="__main__")
        else:
            importlib.import_module(f"chakra.cli.{module}").main(list(argv))
    except SystemExit as exc:
        if exc.code is None:
            return 0
        if isinstance(exc.code, int):
            return exc.code
        print(exc.code, file=sys.stderr)
        return 1
    return 0
