"""Run a tool and record what it did: status, signal, stdout, stderr, wall time, peak RSS.

:func:`run_tool` runs ``python -m chakra.cli.<module>`` in a subprocess: what a user sees,
with the child's peak RSS (from ``wait4``) and wall time. :func:`fork_tool` runs the tool's
``main`` in a forked copy of this process, which skips the interpreter's start-up (tens of
times the throughput when fuzzing; its peak RSS counts the parent's pages and means
nothing). Both see tracebacks (printed as the interpreter would), signals and hangs alike,
and kill the tool's whole process group after the time-out.
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


def _command(module: str, argv: Sequence[str]) -> list[str]:
    if module.endswith(".py"):
        return [sys.executable, str(REPO_ROOT / module), *argv]
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


def _wait(pid: int, timeout_s: float) -> tuple[int, resource.struct_rusage, bool]:
    """Wait for ``pid`` (its own process group), killing the group after ``timeout_s``;
    return its wait status, resource usage and whether it timed out."""
    deadline = time.monotonic() + timeout_s
    pause = 0.002
    timed_out = False
    while True:
        waited, status, usage = os.wait4(pid, os.WNOHANG)
        if waited == pid:
            break
        if time.monotonic() > deadline:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            break
        time.sleep(pause)
        pause = min(pause * 1.5, 0.05)
    with contextlib.suppress(ProcessLookupError):  # what the tool started and left behind
        os.killpg(pid, signal.SIGKILL)
    return status, usage, timed_out


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
    )


def run_tool(
    module: str,
    argv: Sequence[str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    cwd: Optional[Path] = None,
    address_space: Optional[int] = DEFAULT_ADDRESS_SPACE,
    env: Optional[dict[str, str]] = None,
) -> RunResult:
    """Run ``python -m chakra.cli.<module> *argv`` (or the script ``module``, a path ending
    in ``.py`` relative to the repository) in its own session, with stdin empty; kill it and
    everything it started after ``timeout_s``."""
    import subprocess

    with tempfile.TemporaryDirectory(prefix="chakra-fuzz-run-") as scratch:
        out, err = Path(scratch, "stdout"), Path(scratch, "stderr")
        with out.open("wb") as out_f, err.open("wb") as err_f:
            start = time.monotonic()
            proc = subprocess.Popen(
                _command(module, argv),
                stdin=subprocess.DEVNULL,
                stdout=out_f,
                stderr=err_f,
                cwd=cwd,
                env=tool_env(env),
                start_new_session=True,
                preexec_fn=_limit_memory(address_space),
            )
            status, usage, timed_out = _wait(proc.pid, timeout_s)
            proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
            wall = time.monotonic() - start
        return _result(module, argv, status, usage, timed_out, out, err, wall, cwd)


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
        status, usage, timed_out = _wait(pid, timeout_s)
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
