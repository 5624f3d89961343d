"""Exit statuses (issue 32): a reader that leaves early (``| head``) is no error, every bad
option value is a usage error (status 2, one line after the usage line), and a tool given
several files names every bad one before it fails."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chakra.cli.trace_info import summarize
from tests.cli.conftest import Runner, Traces

#: Copies of one small Chakra ET that chakra_trace_info summarises: far more text than a
#: pipe holds (64 KiB) plus what the tool buffers, so that `head` has left before the end.
COPIES = 400


def test_head_closing_the_pipe_is_no_error(traces: Traces) -> None:
    assert COPIES * len(str(summarize(str(traces.et)))) > 2 * 65_536
    command = [sys.executable, "-m", "chakra.cli.trace_info", *[str(traces.et)] * COPIES]
    script = f"set -o pipefail; {shlex.join(command)} | head -2"
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr  # was 1: scripts with pipefail failed
    assert result.stdout.splitlines() == [str(traces.et), "  kind: Chakra ET"]
    assert result.stderr == ""


def test_the_work_goes_on_after_the_reader_left(traces: Traces, tmp_path: Path) -> None:
    """With stdout closed from the start, the tool still reads every file and fails for the
    bad one: the status is the work's, not the pipe's."""
    missing = tmp_path / "missing.et"
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "chakra.cli.trace_info", str(traces.et), str(missing)],
            stdout=write_end, stderr=subprocess.PIPE, text=True, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"chakra_trace_info: error: cannot open {missing}: No such file or directory"
    ]


def _usage_error(outcome, *parts: str) -> None:
    """Status 2: argparse's usage line, then one error line holding ``parts``."""
    outcome.one_line(2, *parts)
    assert outcome.errors[0].startswith("usage: "), outcome.errors
    assert outcome.errors[-1].count(": error: ") == 1


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("sim", ["{et}", "--scale", "compute"], "argument --scale: compute: expected"),
        ("sim", ["{et}", "--network", "ring:x:1"], "argument --network: 'ring:x:1': expected"),
        ("diff", ["{et}", "--scale", "compute"], "argument --scale: compute: expected"),
        ("pipeline", ["--host-trace", "{host}", "--device-trace", "{kineto}", "--output-dir",
                      "{out}", "--et-prefix", "a/b"], "argument --et-prefix: 'a/b'"),
        ("pipeline", ["--host-trace", "{host}", "--device-trace", "{kineto}", "--output-dir",
                      "{out}", "--executor", "dask", "--scheduler", "nowhere"],
         "argument --scheduler: 'nowhere': expected"),
        ("pipeline", ["--host-trace", "{host}", "--device-trace", "{kineto}", "--output-dir",
                      "{out}", "--executor", "dask", "--scheduler", "local:0"],
         "argument --scheduler: 'local:0'"),
        ("synth", ["--output-dir", "{out}", "--steps", "2", "--host-step", "5"],
         "argument --host-step: must be an integer from 0 to 1, not 5"),
        ("synth", ["--output-dir", "{out}", "--unrecorded-gloo-worker", "0"],
         "argument --unrecorded-gloo-worker: needs a gloo worker (--worker-threads or"),
    ],
)  # fmt: skip
def test_a_bad_option_value_is_a_usage_error(
    cli: Runner, traces: Traces, tmp_path: Path, tool: str, arguments: list[str], expected: str
) -> None:
    out = tmp_path / "out"
    fill = {"et": traces.et, "host": traces.host, "kineto": traces.kineto, "out": out}
    _usage_error(cli(tool, *(arg.format(**fill) for arg in arguments)), expected)
    assert not out.exists()


def test_trace_info_names_every_bad_file(cli: Runner, traces: Traces, tmp_path: Path) -> None:
    empty, missing = tmp_path / "empty.json", tmp_path / "missing.json"
    empty.write_bytes(b"")
    outcome = cli("trace_info", empty, traces.et, missing)
    assert outcome.status == 1
    assert outcome.stdout.startswith(f"{traces.et}\n")  # the good file between them is shown
    assert [line.split(": ")[2] for line in outcome.errors] == [
        str(empty),
        f"cannot open {missing}",
    ]
    assert all(line.startswith("chakra_trace_info: error: ") for line in outcome.errors)


def test_validate_names_every_wrong_kind_of_file(cli: Runner, traces: Traces) -> None:
    outcome = cli("validate", traces.host, traces.et, traces.kineto)
    assert outcome.status == 1
    assert len(outcome.errors) == 2, outcome.errors
    host, kineto = outcome.errors
    assert host.startswith(f"chakra_validate: error: {traces.host}: this is a host execution")
    assert kineto.startswith(f"chakra_validate: error: {traces.kineto}: this is a Kineto trace")


def test_sim_names_every_wrong_kind_of_file(cli: Runner, traces: Traces, tmp_path: Path) -> None:
    again = tmp_path / "again.kineto.json"
    shutil.copy(traces.kineto, again)
    outcome = cli("sim", traces.kineto, traces.et, again)
    assert outcome.status == 1
    assert [line.split(": ")[2] for line in outcome.errors] == [str(traces.kineto), str(again)]
    assert all("this is a Kineto trace; chakra_sim wants" in line for line in outcome.errors)


def test_sim_names_every_unreadable_file(cli: Runner, traces: Traces, tmp_path: Path) -> None:
    garbage, cut = tmp_path / "garbage.1.et", tmp_path / "cut.2.et"
    garbage.write_bytes(b"garbage\n")
    cut.write_bytes(traces.et.read_bytes()[:20])
    outcome = cli("sim", garbage, traces.et, cut)
    assert outcome.status == 1
    assert [line.split(": ")[2] for line in outcome.errors] == [str(garbage), str(cut)]
    assert all("file ends inside a message" in line for line in outcome.errors), outcome.errors
