"""The fuzz harness itself: the verdict on made-up runs, and the runners on tiny scripts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.fuzz.harness import (
    Case,
    RunResult,
    Snapshot,
    Verdict,
    describe,
    fork_tool,
    normalise,
    run_case,
    run_tool,
    traceback_summary,
    verdict,
)


def result(returncode=1, stderr="", stdout="", signal=None, timed_out=False, module="sim"):
    return RunResult(module, ("x",), returncode, signal, stdout, stderr, 0.1, 0, timed_out)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    source, out = tmp_path / "in.et", tmp_path / "out"
    source.write_bytes(b"seed")
    out.mkdir()
    return source, out


def test_one_error_line_naming_the_file_is_a_clean_error(files: tuple[Path, Path]) -> None:
    source, out = files
    before = Snapshot.take([source], [out])
    stderr = "chakra_sim: INFO: reading\nchakra_sim: error: in.et: bad size at byte offset 3\n"
    outcome = verdict(result(1, stderr), before)
    assert outcome.verdict is Verdict.CLEAN_ERROR, outcome
    assert outcome.reason == "in.et: bad size at byte offset 3"


@pytest.mark.parametrize(
    ("stderr", "signature"),
    [
        ("Traceback (most recent call last):\n"
         '  File "/x/src/chakra/simulate/model.py", line 3, in _read_nodes\n'
         "    ids_append(node.id)\nOverflowError: int too big to convert\n",
         "sim:traceback:OverflowError@chakra/simulate/model.py:_read_nodes"),
        ("chakra_sim: error: rank 0: node 3 never ran\n",
         "sim:unnamed-file:rank-N:-node-N-never-ran"),
        ("chakra_sim: error: in.et: one\nchakra_sim: error: in.et: two\n",
         "sim:multi-line-error"),
        ("chakra_sim: ERROR: in.et: logged\nchakra_sim: error: in.et: bad\n",
         "sim:multi-line-error"),
        ("", "sim:no-error-line"),
    ],
    ids=["traceback", "unnamed", "two-lines", "error-log-line", "silent"],
)  # fmt: skip
def test_failures_and_their_signatures(
    files: tuple[Path, Path], stderr: str, signature: str
) -> None:
    outcome = verdict(result(1, stderr), Snapshot.take([files[0]], [files[1]]))
    assert outcome.verdict is Verdict.FAILURE
    assert outcome.signature == signature


def test_signal_timeout_and_status(files: tuple[Path, Path]) -> None:
    before = Snapshot.take([files[0]], [files[1]])
    assert verdict(result(None, signal=11), before).signature == "sim:signal:SIGSEGV"
    assert verdict(result(None, signal=9, timed_out=True), before).signature == "sim:timeout"
    assert verdict(result(3, "chakra_sim: error: in.et: x\n"), before).signature == "sim:status:3"


def test_usage_errors_need_the_usage_line(files: tuple[Path, Path]) -> None:
    before = Snapshot.take([files[0]], [files[1]])
    usage = "usage: chakra_converter PyTorch [-h] --input INPUT\n       --output OUTPUT\n"
    line = "chakra_converter PyTorch: error: the following arguments are required: --output\n"
    good = verdict(result(2, usage + line, module="converter"), before)
    assert good.verdict is Verdict.CLEAN_ERROR, good
    assert verdict(result(2, line, module="converter"), before).signature == (
        "converter:usage-format"
    )


def test_error_with_output_left_or_input_changed(files: tuple[Path, Path]) -> None:
    source, out = files
    before = Snapshot.take([source], [out])
    (out / "half.et").write_bytes(b"x")
    error = "chakra_sim: error: in.et: bad\n"
    assert verdict(result(1, error), before).signature == "sim:output-on-error"
    (out / "half.et").unlink()
    (out / ".x.et.abc.partial").write_bytes(b"x")
    assert verdict(result(1, error), before).signature == "sim:partial-left"
    (out / ".x.et.abc.partial").unlink()
    source.write_bytes(b"changed")
    assert verdict(result(0), before).signature == "sim:input-modified"


def test_success_needs_valid_outputs(tmp_path: Path) -> None:
    good, bad, nan = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    good.write_text(json.dumps({"a": [1]}))
    bad.write_text('{"a": ')
    nan.write_text('{"a": NaN}')
    before = Snapshot.take([], [])
    assert verdict(result(0), before, [good]).verdict is Verdict.OK
    assert verdict(result(0), before, [bad]).signature == "sim:invalid-output:JSONDecodeError"
    assert verdict(result(0), before, [nan]).signature == "sim:invalid-output:ValueError"
    assert verdict(result(0), before, [tmp_path / "d.json"]).signature == (
        "sim:missing-output:missing"
    )
    assert verdict(result(0, "x.py:3: RuntimeWarning: overflow\n"), before).signature == (
        "sim:stray-stderr:RuntimeWarning"
    )


def test_a_chakra_et_output_must_validate(tmp_path: Path) -> None:
    from chakra.et import GlobalMetadata, Node, make_attr, write_et

    path = tmp_path / "g.et"
    node = Node(id=1, name="a", type=4, data_deps=[7], attr=[make_attr("is_cpu_op", True)])
    write_et(path, GlobalMetadata(version="0.0.4"), [node])
    outcome = verdict(result(0), Snapshot.take([], []), [path])
    assert outcome.signature == "sim:invalid-output:dangling_data_dep", outcome


def test_traceback_summary_keeps_the_innermost_chakra_frame() -> None:
    stderr = ("Traceback (most recent call last):\n"
              '  File "/r/src/chakra/cli/sim.py", line 1, in main\n    x\n'
              '  File "/r/src/chakra/ingest/json_input.py", line 9, in decode_json\n    y\n'
              '  File "/usr/lib/python3/json/decoder.py", line 3, in decode\n    z\n'
              "msgspec.DecodeError: Invalid UTF-8\n")  # fmt: skip
    assert traceback_summary(stderr) == (
        "DecodeError",
        "Invalid UTF-8",
        "chakra/ingest/json_input.py:decode_json",
    )


def test_normalise_drops_particulars() -> None:
    assert normalise("rank 3: node id 17 ('aten::mm') appears twice in /a/b.et") == (
        "rank-N:-node-id-N-(<q>)-appears-twice"
    )


SCRIPT = """\
import os, signal, sys, time
what = sys.argv[1]
if what == "segv":
    os.kill(os.getpid(), signal.SIGSEGV)
if what == "hang":
    time.sleep(60)
if what == "raise":
    raise ValueError("boom")
print("integration_tests: error: nothing here", file=sys.stderr)
sys.exit(1)
"""


@pytest.mark.parametrize("runner", [run_tool, fork_tool], ids=["subprocess", "fork"])
@pytest.mark.slow
def test_runners_see_signals_hangs_and_tracebacks(tmp_path: Path, runner) -> None:
    script = tmp_path / "integration_tests.py"
    script.write_text(SCRIPT)
    segv = runner(str(script), ["segv"], 10)
    assert segv.signal == 11 and segv.returncode is None
    hang = runner(str(script), ["hang"], 0.5)
    assert hang.timed_out and hang.wall_s < 10
    raised = runner(str(script), ["raise"], 10)
    assert raised.returncode == 1 and "ValueError: boom" in raised.stderr
    assert re.search(r"Traceback \(most recent call last\)", raised.stderr)


def test_run_case_checks_added_outputs(tmp_path: Path) -> None:
    """chakra_generator's files are checked although the case names none of them."""
    out = tmp_path / "out"
    out.mkdir()
    case = Case("generator", ("--num_npus", "2", "--output-dir", str(out)), (), (), out)
    _, outcome = run_case(case, fork_tool)
    assert outcome.verdict is Verdict.OK, outcome
    assert len(list(out.glob("*.et"))) > 4


def test_an_output_the_next_tool_refuses_is_a_failure(
    base: dict[str, Path], tmp_path: Path
) -> None:
    from tests.fuzz.harness import check_output

    linked = json.loads(base["et_plus"].read_text())
    assert check_output(base["et_plus"]) is None  # the seed converts
    # an ET+ whose id the converter refuses (a linker that checks less than it writes)
    linked["nodes"][1]["id"] = -7
    broken = tmp_path / "linked.json"
    broken.write_text(json.dumps(linked))
    assert check_output(broken).startswith("chakra_converter rejects it: ")
    assert check_output(base["et"]) is None  # validated, and chakra_sim runs it


# --- the classes of issue 30: errors through the process pool, early signals ---------------


def stopped(returncode=None, stderr="", signal=None, sent=2, module="sim"):
    """A run that the runner sent signal ``sent`` to."""
    return RunResult(module, ("x",), returncode, signal, "", stderr, 0.1, 0, False,
                     sent_signal=sent)  # fmt: skip


def test_a_signalled_run_killed_by_the_signal_is_a_failure(files: tuple[Path, Path]) -> None:
    """-2/-15: the signal's default action (no guard yet), or Python's re-raise of an
    uncaught KeyboardInterrupt; -6: an abort."""
    before = Snapshot.take([files[0]], [files[1]])
    assert verdict(stopped(signal=2), before).signature == "sim:signal:SIGINT"
    assert verdict(stopped(signal=15, sent=15), before).signature == "sim:signal:SIGTERM"
    assert verdict(stopped(signal=6), before).signature == "sim:signal:SIGABRT"
    trace = 'Traceback (most recent call last):\n  File "<string>", line 1\nKeyboardInterrupt\n'
    assert verdict(stopped(1, trace), before).signature == "sim:traceback:KeyboardInterrupt@?"


def test_a_signalled_run_ending_130_or_143_with_one_line_is_interrupted(
    files: tuple[Path, Path],
) -> None:
    before = Snapshot.take([files[0]], [files[1]])
    outcome = verdict(stopped(130, "chakra_sim: interrupted\n"), before)
    assert outcome.verdict is Verdict.INTERRUPTED and outcome.ok, outcome
    term = verdict(stopped(143, "chakra_sim: terminated (SIGTERM)\n", sent=15), before)
    assert term.verdict is Verdict.INTERRUPTED, term
    assert verdict(stopped(130, ""), before).verdict is Verdict.INTERRUPTED
    # log lines may come first, as with an error line
    logged = "chakra_sim: WARNING: slow\nchakra_sim: interrupted\n"
    assert verdict(stopped(130, logged), before).verdict is Verdict.INTERRUPTED


@pytest.mark.parametrize(
    ("run", "signature"),
    [
        (stopped(130, "chakra_sim: interrupted\nException ignored in: <function>\n"),
         "sim:interrupt-multi-line"),
        (stopped(130, "something else\n"), "sim:interrupt-line"),
        (stopped(143, "chakra_sim: terminated (SIGTERM)\n"), "sim:status:143"),  # sent SIGINT
        (stopped(130, "chakra_sim: interrupted\n", sent=None), "sim:status:130"),  # not sent
    ],
    ids=["two-lines", "other-line", "wrong-status", "not-signalled"],
)  # fmt: skip
def test_interrupted_runs_that_break_the_promise(
    files: tuple[Path, Path], run: RunResult, signature: str
) -> None:
    outcome = verdict(run, Snapshot.take([files[0]], [files[1]]))
    assert outcome.verdict is Verdict.FAILURE and outcome.signature == signature, outcome


def test_an_interrupted_run_leaves_nothing_partial(files: tuple[Path, Path]) -> None:
    """A temporary, or an output that is not a whole valid one, left by a stopped run; a
    whole output committed before the signal may stay."""
    source, out = files
    line = "chakra_sim: interrupted\n"
    before = Snapshot.take([source], [out])
    (out / ".t.json.abc-1.x.partial").write_bytes(b"{")
    assert verdict(stopped(130, line), before).signature == "sim:partial-left"
    (out / ".t.json.abc-1.x.partial").unlink()
    (out / "t.json").write_bytes(b'{"a": ')
    assert verdict(stopped(130, line), before).signature == (
        "sim:output-on-interrupt:JSONDecodeError"
    )
    (out / "t.json").write_text('{"a": 1}')
    assert verdict(stopped(130, line), before).verdict is Verdict.INTERRUPTED
    (out / "notes.txt").write_text("half")
    assert verdict(stopped(130, line), before).signature == "sim:output-on-interrupt"


def test_a_pool_error_that_names_no_file_is_a_failure(files: tuple[Path, Path]) -> None:
    """chakra_pipeline -j 2 reported a dead worker instead of the error it raised (an
    exception that could not be unpickled): the line names no input, whatever else it
    names."""
    before = Snapshot.take([files[0]], [files[1]])
    died = (
        "chakra_pipeline: error: a worker process ended abruptly (killed by a signal, or "
        "out of memory); rerun with -j 1 to see its error, or with less work per process\n"
    )
    outcome = verdict(result(1, died, module="pipeline"), before)
    assert outcome.signature == "pipeline:worker-died", outcome
    named = died.replace("error: a worker", f"error: {files[0]}: a worker")
    assert verdict(result(1, named, module="pipeline"), before).signature == (
        "pipeline:worker-died"
    )


def test_an_error_must_name_the_broken_input_among_healthy_ones(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    broken, healthy = job / "rank0.host_et.json", job / "rank1.host_et.json"
    broken.write_text("{")
    healthy.write_text("{}")
    before = Snapshot.take([broken, healthy], [])
    names_healthy = f"chakra_pipeline: error: {healthy}: not a valid host execution trace\n"
    wrong = verdict(result(1, names_healthy, module="pipeline"), before, culprits=[broken])
    assert wrong.verdict is Verdict.FAILURE and "unnamed-file" in wrong.signature, wrong
    names_broken = "chakra_pipeline: error: rank0.host_et.json: not valid\n"
    right = verdict(result(1, names_broken, module="pipeline"), before, culprits=[broken])
    assert right.verdict is Verdict.CLEAN_ERROR, right


@pytest.mark.parametrize(
    ("stop", "status", "line"),
    [(2, 130, "chakra_trace_info: interrupted"),
     (15, 143, "chakra_trace_info: terminated (SIGTERM)")],
    ids=["SIGINT", "SIGTERM"],
)  # fmt: skip
def test_a_signalled_case_runs_as_its_console_script(
    base: dict[str, Path], tmp_path: Path, stop: int, status: int, line: str
) -> None:
    """Whatever the runner given (here the forked one, whose imports are done), a case with
    ``signal_after_s`` runs in a subprocess as pip's wrapper would, and gets its signal at
    the script's first line: the guard's line and status."""
    case = Case("trace_info", (str(base["host"]),), (base["host"],), (), tmp_path,
                signal_after_s=0.0, stop_signal=stop)  # fmt: skip
    run, outcome = run_case(case, fork_tool)
    assert run.sent_signal == stop, describe(run, outcome)
    assert (run.returncode, run.stderr.strip()) == (status, line), describe(run, outcome)
    assert outcome.verdict is Verdict.INTERRUPTED, describe(run, outcome)


@pytest.mark.parametrize("host_side", [True, False], ids=["host", "kineto"])
def test_a_broken_rank_of_a_folder_run_with_two_workers(
    fuzz_seeds, tmp_path: Path, host_side: bool
) -> None:
    """The pool case: a 3-rank folder whose rank 0 has a truncated host ET (Kineto trace),
    through chakra_pipeline -j 2; the worker's error names the broken file."""
    import random

    from chakra.fileio import read_input
    from tests.fuzz.targets import _pipeline_pool

    seed = next(s for s in fuzz_seeds.by_format["host" if host_side else "kineto"]
                if len(s.job) == 3)  # fmt: skip
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    mutant = tmp_path / "in" / "mutant.json"
    mutant.write_bytes(read_input(seed.path)[:-40])
    case = _pipeline_pool(host_side)(mutant, seed, tmp_path / "out", random.Random(0))
    assert case.argv[-2:] == ("-j", "2") and len(case.inputs) == 1 + 6
    run, outcome = run_case(case, fork_tool)
    assert outcome.verdict is Verdict.CLEAN_ERROR, describe(run, outcome)
    assert case.culprits[0].name in outcome.reason
