"""``chakra.cli.runner``: a signal during a tool's work ends it with one line and 130/143,
also when the interpreter swallowed the interrupt in a ``__del__`` or weakref callback."""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chakra.cli.runner import run_tool
from chakra.errors import ChakraError


class _InterruptedOnDelete:
    """An object whose finaliser is where Ctrl-C landed (matplotlib's transform callbacks,
    met by chakra_pipeline signalled 0.5 s after start): the interpreter reports the
    KeyboardInterrupt as "Exception ignored" and goes on."""

    def __del__(self) -> None:
        raise KeyboardInterrupt


def test_an_interrupt_swallowed_in_a_finaliser_still_ends_the_tool() -> None:
    finished = []

    def action(_: argparse.Namespace) -> None:
        victim = _InterruptedOnDelete()
        del victim
        gc.collect()
        finished.append(True)  # the work goes on, as the interpreter let it

    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        status = run_tool(argparse.ArgumentParser(prog="tool"), action, [])
    assert finished and status == 130
    assert stderr.getvalue().splitlines() == ["tool: interrupted"]


def test_other_unraisable_errors_still_reach_the_hook_before(monkeypatch) -> None:
    class Broken:
        def __del__(self) -> None:
            raise ValueError("boom")

    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))

    def action(_: argparse.Namespace) -> None:
        broken = Broken()
        del broken

    assert run_tool(argparse.ArgumentParser(prog="tool"), action, []) == 0
    assert [type(e) for e in seen] == [ValueError]


class _SignalledWhileNamed:
    """A descriptor whose ``__set_name__`` is where the signal landed (matplotlib's
    ``_AxesBase`` class body, met by chakra_sim --plot signalled 0.48 s after start): the
    interpreter turns the KeyboardInterrupt into a RuntimeError."""

    def __init__(self, stop: signal.Signals) -> None:
        self.stop = stop

    def __set_name__(self, owner: type, name: str) -> None:
        os.kill(os.getpid(), self.stop)


@pytest.mark.parametrize(
    ("stop", "status", "said"),
    [
        (signal.SIGINT, 130, "tool: interrupted"),
        (signal.SIGTERM, 143, "tool: terminated (SIGTERM)"),
    ],
)
def test_a_signal_the_interpreter_wrapped_in_another_error_still_ends_the_tool(
    stop: signal.Signals, status: int, said: str
) -> None:
    def action(_: argparse.Namespace) -> None:
        type("Victim", (), {"attribute": _SignalledWhileNamed(stop)})

    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        assert run_tool(argparse.ArgumentParser(prog="tool"), action, []) == status
    assert stderr.getvalue().splitlines() == [said]


def _import_that_says_not_installed(stop: signal.Signals) -> bool:
    """As numpy's import does (met through matplotlib by chakra_pipeline's plot): the
    signal becomes an ImportError, which the caller reads as a missing package."""
    try:
        try:
            os.kill(os.getpid(), stop)
        except BaseException as exc:
            raise ImportError("numpy: Importing the numpy C-extensions failed") from exc
    except ImportError:
        return False
    return True


@pytest.mark.parametrize(
    ("stop", "status", "said"),
    [
        (signal.SIGINT, 130, "tool: interrupted"),
        (signal.SIGTERM, 143, "tool: terminated (SIGTERM)"),
    ],
)
def test_a_signal_caught_as_another_error_and_handled_still_ends_the_tool(
    stop: signal.Signals, status: int, said: str
) -> None:
    finished = []

    def action(_: argparse.Namespace) -> None:
        finished.append(_import_that_says_not_installed(stop))  # the work goes on

    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        assert run_tool(argparse.ArgumentParser(prog="tool"), action, []) == status
    assert finished == [False]
    assert stderr.getvalue().splitlines() == [said]


def test_an_error_with_no_signal_is_reported_as_itself() -> None:
    def action(_: argparse.Namespace) -> None:
        raise ChakraError("bad input")

    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        assert run_tool(argparse.ArgumentParser(prog="tool"), action, []) == 1
    assert stderr.getvalue().splitlines() == ["tool: error: bad input"]


@pytest.mark.parametrize(
    ("stop", "status", "said"),
    [
        (signal.SIGINT, 130, "tool: interrupted"),
        (signal.SIGTERM, 143, "tool: terminated (SIGTERM)"),
    ],
)
def test_a_signal_during_an_import_is_raised_once_the_import_has_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: signal.Signals, status: int, said: str
) -> None:
    """The module is imported whole (its last line ran, it is in ``sys.modules``), then the
    tool ends as signalled, without reaching the work after the import's."""
    name = f"signalled_while_imported_{stop.name.lower()}"
    (tmp_path / f"{name}.py").write_text(
        f"import os, signal\nos.kill(os.getpid(), {int(stop)})\n"
        "for _ in range(1000):\n    pass\nfinished = True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    reached = []

    def action(_: argparse.Namespace) -> None:
        importlib.import_module(name)
        reached.append("after the import")
        for _ in range(200):  # the deferred signal is raised within milliseconds
            time.sleep(0.005)
        reached.append("the end")

    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        assert run_tool(argparse.ArgumentParser(prog="tool"), action, []) == status
    assert sys.modules[name].finished is True
    assert reached == ["after the import"]
    assert stderr.getvalue().splitlines() == [said]
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL  # put back as it was


#: Modules that protobuf's and numpy's extensions import as they start (``calendar``
#: through protobuf's well-known types), where a signal cut short crashed protobuf 4.21's
#: runtime (status -11, nothing printed), the packages, and a module of ours. Each is
#: imported by the action's first line, not before (``locale`` is, by argparse).
IMPORTED_BY_EXTENSIONS = ["google.protobuf.internal.well_known_types", "calendar",
                          "numpy", "numpy._core.multiarray", "chakra.et.schema"]  # fmt: skip

_SIGNAL_WHEN_IMPORTED = """
import importlib, os, signal, sys
from chakra.cli.runner import run_tool
import argparse

class SignalWhenImported:
    def find_spec(self, name, path=None, target=None):
        if name == sys.argv[1]:
            os.kill(os.getpid(), signal.SIGINT)

def action(_):
    sys.meta_path.insert(0, SignalWhenImported())
    import chakra.et, chakra.simulate.run  # what chakra_diff's work imports

status = run_tool(argparse.ArgumentParser(prog="tool"), action, [])
print("imported whole:", sys.argv[1] in sys.modules, file=sys.stderr)
sys.exit(status)
"""


@pytest.mark.parametrize("module", IMPORTED_BY_EXTENSIONS)
def test_a_signal_while_an_extension_imports_its_modules_ends_the_tool_cleanly(
    module: str,
) -> None:
    """In a fresh interpreter (nothing loaded yet), the signal lands as ``module`` begins
    to import: the import completes, and the tool ends with status 130 and its line."""
    done = subprocess.run([sys.executable, "-c", _SIGNAL_WHEN_IMPORTED, module],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 130, done.stderr
    assert done.stderr.splitlines() == ["tool: interrupted", "imported whole: True"]


def test_a_second_signal_during_an_import_that_does_not_end_is_raised_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import that takes long (3 s): the first Ctrl-C waits for it, the second ends the
    tool at once."""
    name = "signalled_twice_while_imported"
    (tmp_path / f"{name}.py").write_text(
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(0.05)\n"
        "os.kill(os.getpid(), signal.SIGINT)\nfor _ in range(300):\n    time.sleep(0.01)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        action = lambda _: importlib.import_module(name)  # noqa: E731
        assert run_tool(argparse.ArgumentParser(prog="tool"), action, []) == 130
    assert name not in sys.modules  # cut short
    assert stderr.getvalue().splitlines() == ["tool: interrupted"]
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # no alarm left behind


def test_a_callers_alarm_is_left_alone_when_no_signal_waits() -> None:
    """The timer is taken only while a signal waits for an import: an alarm the caller set
    before the tool still reaches the caller's handler during the work."""
    rang = []
    previous = signal.signal(signal.SIGALRM, lambda *_: rang.append(True))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)

        def action(_: argparse.Namespace) -> None:
            for _ in range(100):
                if rang:
                    return
                time.sleep(0.01)

        assert run_tool(argparse.ArgumentParser(prog="tool"), action, []) == 0
        assert rang == [True]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
