"""``chakra.cli.runner``: a signal during a tool's work ends it with one line and 130/143,
also when the interpreter swallowed the interrupt in a ``__del__`` or weakref callback."""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import sys

from chakra.cli.runner import run_tool


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
