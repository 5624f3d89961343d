"""An interrupted or failing first run keeps the ranks it finished (their manifests prove
them) and nothing else; the rerun reuses them and ends with the bytes of a run never
interrupted. A job whose simulation fails (built to deadlock) keeps its ET+ files, its
``.et`` family and comm-group file, and says which step failed in one line."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

import chakra
import chakra.pipeline.outputs as outputs_module
import chakra.pipeline.rank_work as rank_work_module
import chakra.pipeline.run as run_module
from chakra.cli.pipeline import main
from chakra.errors import ChakraError
from chakra.pipeline import ranks_in_folder, run_pipeline
from chakra.synth import SynthOptions, generate_job

RANK_FILES = {0: {"rank0.et_plus.json", "workload.0.et", "rank0.report.json"},
              1: {"rank1.et_plus.json", "workload.1.et", "rank1.report.json"}}  # fmt: skip
GROUPS = "workload.comm_groups.json"
SRC = str(Path(chakra.__file__).resolve().parents[1])


def _contents(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def _reference(
    factory: pytest.TempPathFactory, name: str, options: SynthOptions
) -> tuple[Path, dict[str, bytes]]:
    """A synthetic job's traces and the outputs of a run never interrupted."""
    traces = factory.mktemp(name)
    generate_job(options, traces)
    out = factory.mktemp(f"{name}-reference") / "out"
    run_pipeline(ranks_in_folder(traces), out, plot=False)
    return traces, _contents(out)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """A 2-rank synthetic job and the outputs of a run never interrupted."""
    return _reference(tmp_path_factory, "traces", SynthOptions(seed=7, ranks=2, steps=1,
                                                               ops_per_step=60))  # fmt: skip


def _raising_at(call: int, real: Callable[..., Any], error: BaseException) -> Callable[..., Any]:
    """``real``, raising ``error`` at its call number ``call`` (from 1)."""
    calls = [0]

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == call:
            raise error
        return real(*args, **kwargs)

    return wrapper


#: Where the first run stops: (module, function, which call raises), the files it keeps and
#: the ranks the rerun reuses.
POINTS = {
    # rank 1 linked (its ET+ committed) but not converted: rank 0 alone is proven
    "converting rank 1": (rank_work_module, "convert_file", 2, RANK_FILES[0], [0]),
    # every rank done, before the cross-rank step
    "all ranks done": (run_module, "agree_reads", 1, RANK_FILES[0] | RANK_FILES[1], [0, 1]),
    # the .et family and its comm-group file committed, the replay under way
    "simulating": (run_module, "simulate", 1, RANK_FILES[0] | RANK_FILES[1] | {GROUPS},
                   [0, 1]),
    # the timeline and report.json written into the job's group, the page not: none stays
    "writing the page": (outputs_module, "write_report_html", 1,
                         RANK_FILES[0] | RANK_FILES[1] | {GROUPS}, [0, 1]),
}  # fmt: skip


@pytest.mark.parametrize("point", list(POINTS))
@pytest.mark.parametrize("error", [KeyboardInterrupt(), ChakraError("a rank failed")])
def test_a_stopped_first_run_keeps_finished_ranks_and_the_rerun_reuses_them(
    job: tuple[Path, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    point: str, error: BaseException,
) -> None:  # fmt: skip
    traces, reference = job
    module, name, call, kept, reused = POINTS[point]
    out = tmp_path / "new" / "out"  # two folders this run creates
    with monkeypatch.context() as patch:
        patch.setattr(module, name, _raising_at(call, getattr(module, name), error))
        with pytest.raises(type(error)):
            run_pipeline(ranks_in_folder(traces), out, plot=False)
    assert set(_contents(out)) == kept  # no partial file, no job file, no unproven output
    result = run_pipeline(ranks_in_folder(traces), out, plot=False)
    assert result.reused == reused
    assert _contents(out) == reference


def test_a_first_run_stopped_before_any_rank_finished_leaves_no_folder(
    job: tuple[Path, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces, _ = job
    real = rank_work_module.convert_file
    monkeypatch.setattr(rank_work_module, "convert_file", _raising_at(1, real, KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        run_pipeline(ranks_in_folder(traces), tmp_path / "new" / "out", plot=False)
    assert list(tmp_path.iterdir()) == []


def _without_one_all_reduce(source: Path, target: Path, rank: int) -> None:
    """``source``'s job copied to ``target``, rank ``rank`` without its first all-reduce
    (host op, its record_param_comms and nccl children; the Kineto ops, kernel, runtime
    calls and flows): the other rank waits at it forever."""
    target.mkdir()
    for path in source.iterdir():
        (target / path.name).write_bytes(path.read_bytes())
    host_path, kineto_path = target / f"rank{rank}.host_et.json", target / f"rank{rank}.kineto.json"
    host = json.loads(host_path.read_text())
    top = next(node["id"] for node in host["nodes"] if node["name"] == "c10d::allreduce_")
    dropped = {top}
    for node in host["nodes"]:  # parents come before their children
        if node.get("ctrl_deps") in dropped:
            dropped.add(node["id"])
    rf_ids = {attr["value"] for node in host["nodes"] if node["id"] in dropped
              for attr in node["attrs"] if attr["name"] == "rf_id"}  # fmt: skip
    host["nodes"] = [node for node in host["nodes"] if node["id"] not in dropped]
    host_path.write_text(json.dumps(host))
    kineto = json.loads(kineto_path.read_text())
    events = kineto["traceEvents"]
    external = [e for e in events if e.get("args", {}).get("External id") in rf_ids]
    correlations = {e["args"]["correlation"] for e in external if "correlation" in e["args"]}
    assert [e["name"] for e in external if e.get("cat") == "kernel"]  # the all-reduce's

    def gone(event: dict) -> bool:
        args = event.get("args", {})
        return (args.get("External id") in rf_ids or args.get("correlation") in correlations
                or (event.get("cat") == "ac2g" and event.get("id") in correlations))  # fmt: skip

    kineto["traceEvents"] = [event for event in events if not gone(event)]
    kineto_path.write_text(json.dumps(kineto))


def test_a_job_that_deadlocks_keeps_its_et_family_and_names_the_step(
    job: tuple[Path, dict[str, bytes]], tmp_path: Path, capsys: pytest.CaptureFixture,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    traces, _ = job
    dead = tmp_path / "dead"
    _without_one_all_reduce(traces, dead, rank=1)
    out = tmp_path / "out"
    caplog.set_level(logging.INFO)
    for run in ("first", "rerun"):
        with pytest.raises(SystemExit) as done:
            main(["--trace-dir", str(dead), "--output-dir", str(out), "--no-plot"])
        assert done.value.code == 1
        stderr = capsys.readouterr().err
        (line,) = [line for line in stderr.splitlines() if ": error: " in line]
        assert line.startswith("chakra_pipeline: error: simulating the job: deadlock: "), line
        assert line.endswith(f"(the ET+ and .et files are in {out})"), line
        assert "Traceback" not in stderr
        assert set(_contents(out)) == RANK_FILES[0] | RANK_FILES[1] | {GROUPS}, run
    assert any(m.startswith("reusing 2 of 2 ranks") for m in caplog.messages)  # the rerun
    assert json.loads((out / GROUPS).read_text()) == {"1": [0, 1], "2": [0, 1]}


@pytest.fixture(scope="module")
def three_ranks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """A 3-rank synthetic job and the outputs of a run never interrupted."""
    return _reference(tmp_path_factory, "three", SynthOptions(seed=8, ranks=3, steps=1,
                                                              ops_per_step=150))  # fmt: skip


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_once_rank_0_is_proven_then_a_rerun(
    three_ranks: tuple[Path, dict[str, bytes]], tmp_path: Path, jobs: str
) -> None:
    """Ctrl-C as a terminal sends it (SIGINT to the whole process group, workers included)
    as soon as rank 0's manifest appears: rank 0 stays, the rerun reuses it."""
    traces, reference = three_ranks
    out = tmp_path / "out"
    command = [sys.executable, "-m", "chakra.cli.pipeline", "--trace-dir", str(traces),
               "--output-dir", str(out), "--no-plot", "-j", jobs]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": SRC}
    process = subprocess.Popen(command, env=env, start_new_session=True, text=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 60
    while not (out / "rank0.report.json").exists() and process.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert stderr.splitlines()[-1] == "chakra_pipeline: interrupted" and "Traceback" not in stderr
    assert f"{out}: kept rank" in stderr
    kept = set(_contents(out))
    assert RANK_FILES[0] <= kept and not [name for name in kept if name.endswith(".partial")]
    rerun = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert re.search(r"reused [1-3] of 3 ranks", rerun.stderr), rerun.stderr
    assert _contents(out) == reference
