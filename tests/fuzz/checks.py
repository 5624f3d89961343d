"""Helpers of the regression tests: cases of each tool, and the assertion of the promise."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz.harness import Case, Outcome, RunResult, Verdict, describe, fork_tool, run_case
from tests.fuzz.targets import VALIDATION_FAILED

GIB = 1 << 30


def xfail(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=reason)


def case(*args: Any, fixed: bool = False, **kwargs: Any) -> Any:
    """A parameter, named by its first value unless ``id`` is given; ``fixed=False`` marks
    it as failing today (strict xfail, with the reason ``why``)."""
    marks = () if fixed else (xfail(kwargs.pop("why")),)
    kwargs.pop("why", None)
    kwargs.setdefault("id", str(args[0]))
    return pytest.param(*args, marks=marks, **kwargs)


def check(case_: Case, runner=fork_tool) -> tuple[RunResult, Outcome]:
    """Run ``case_`` and assert the promise: a valid output or one clean error line."""
    result, outcome = run_case(case_, runner)
    assert outcome.verdict is not Verdict.FAILURE, describe(result, outcome)
    return result, outcome


def out_dir(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    out.mkdir(parents=True, exist_ok=True)
    return out


def host_link(host: Path, kineto: Path, out: Path) -> Case:
    target = out / "linked.json"
    return Case("trace_link", ("--chakra-host-trace", str(host), "--chakra-device-trace",
                               str(kineto), "--output-file", str(target)),
                (host, kineto), (target,), out)  # fmt: skip


def convert(source: Path, out: Path, *extra: str) -> Case:
    target = out / "converted.et"
    return Case("converter", ("PyTorch", "--input", str(source), "--output", str(target),
                              *extra), (source,), (target,), out)  # fmt: skip


def timeline_of(source: Path, out: Path) -> Case:
    target = out / "timeline.json"
    return Case("timeline_visualizer", ("--input_filename", str(source), "--output_filename",
                                        str(target), "--input-format", "chakra-sim"),
                (source,), (target,), out)  # fmt: skip


def sim(out: Path, *files: Path, options: tuple[str, ...] = ()) -> Case:
    return Case("sim", (*map(str, files), *options), files, (), out)


def validate(out: Path, *files: Path) -> Case:
    return Case("validate", tuple(map(str, files)), files, (), out,
                unnamed_errors=VALIDATION_FAILED)  # fmt: skip


@contextmanager
def answer_within(seconds: int) -> Iterator[None]:
    """Fail (AssertionError) what runs in this process for more than ``seconds``: a walk
    that loops, which a forked tool's time-out would catch (SIGALRM; the main thread)."""

    def stop(signum: int, frame: object) -> None:
        raise AssertionError(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
