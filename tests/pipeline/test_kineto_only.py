"""The Kineto-only path (issue 33): ``chakra_pipeline`` and ``chakra_trace_link`` with a
Kineto trace and no host execution trace. Each expectation is read from the raw JSON of
the input here (steps, GPU ops launched in a step), not from the code under test."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path
from typing import Any, Optional

import pytest

from chakra.cli import pipeline, trace_link
from chakra.synth import SynthOptions, generate_job
from tests.conftest import REPO_ROOT, AstraSim, assert_astra_sim_ran_all

HTA = ["alexnet", "amd_mi250", "event_sync", "event_sync_multi_stream", "nccl_data",
       "simple_add", "triton_example"]  # fmt: skip
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset")


def _events(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as stream:
        document = json.load(stream)
    return document["traceEvents"] if isinstance(document, dict) else document


def _last_step(events: list[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """The CPU-side ``ProfilerStep#N`` annotation with the highest N (None: no steps), but
    the one before when the last was cut short (under a quarter of the median of the
    others: a step the profiler opened and closed as it stopped)."""
    steps = sorted((e for e in events if e.get("name", "").startswith("ProfilerStep#")
                    and e.get("cat") in ("user_annotation", "cpu_op")),
                   key=lambda e: int(e["name"].split("#")[1]))  # fmt: skip
    if len(steps) >= 2 and steps[-1]["dur"] < 0.25 * statistics.median(
        e["dur"] for e in steps[:-1]
    ):
        return steps[-2]
    return steps[-1] if steps else None


def _gpu_ops_launched_in(events: list[dict[str, Any]], step: Optional[dict[str, Any]]) -> int:
    """GPU ops whose launching call (same correlation) started within ``step`` (all GPU ops
    when None)."""
    gpu = [e for e in events if e.get("cat") in GPU_CATEGORIES and e.get("ph") == "X"]
    if step is None:
        return len(gpu)
    begin, end = step["ts"], step["ts"] + step["dur"]
    calls = {e["args"]["correlation"]: e["ts"] for e in events
             if e.get("cat") in ("cuda_runtime", "cuda_driver", "Runtime")
             and "correlation" in e.get("args", {})}  # fmt: skip
    return sum(1 for e in gpu if begin <= calls.get(e["args"].get("correlation"), -1) <= end)


def _run(main: Any, argv: list[str]) -> int:
    with pytest.raises(SystemExit) as done:
        main(argv)
    return int(done.value.code or 0)


@pytest.mark.parametrize("name", HTA)
def test_each_shared_kineto_trace_goes_through_the_pipeline(
    shared_traces: Path, tmp_path: Path, name: str
) -> None:
    """No host ET: .et, replay and report, the last ProfilerStep (or the whole trace)."""
    kineto = shared_traces / "hta" / f"{name}.kineto.json.gz"
    out = tmp_path / "run"
    argv = ["--device-trace", str(kineto), "--output-dir", str(out), "--no-timeline",
            "--no-plot", "--log-level", "ERROR"]  # fmt: skip
    assert _run(pipeline.main, argv) == 0
    report = json.loads((out / "report.json").read_text())
    (rank,) = report["ranks"]
    link = rank["link"]
    assert link["host_source"] == "kineto" and link["host_source_notes"]
    events = _events(kineto)
    step = _last_step(events)
    expected_step = None if step is None else int(step["name"].split("#")[1])
    assert link["window"]["step"] == expected_step
    in_window = link["gpu_ops_total"] - link["gpu_ops_outside_window"]
    assert in_window == _gpu_ops_launched_in(events, step) > 0
    assert link["gpu_ops_linked"] == in_window
    assert abs(rank["simulation"]["error_pct"]) < 0.01
    assert (out / "workload.0.et").stat().st_size > 0
    assert (
        "Host side made from the Kineto trace</b> on 1 of 1 ranks"
        in (out / "report.html").read_text()
    )


def test_a_trace_without_cpu_ops_is_one_line_naming_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kineto = tmp_path / "gpu_only.kineto.json"
    kineto.write_text(json.dumps({"schemaVersion": 1, "traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
         "args": {"stream": 7, "correlation": 1, "device": 0}}]}))  # fmt: skip
    out = tmp_path / "et_plus.json"
    argv = ["--device-trace", str(kineto), "--output-file", str(out)]
    assert _run(trace_link.main, argv) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [lines[-1]] and "no CPU ops" in lines[-1] and str(kineto) in lines[-1]
    assert not out.exists()


def _kineto_only_job(folder: Path, ranks: int, steps: int) -> Path:
    generate_job(SynthOptions(seed=5, ranks=ranks, steps=steps, ops_per_step=40), folder)
    for host in folder.glob("*host_et*"):
        host.unlink()
    return folder


def test_trace_link_without_a_host_trace_writes_et_plus_saying_so(tmp_path: Path) -> None:
    traces = _kineto_only_job(tmp_path / "traces", 1, 2)
    out = tmp_path / "rank0.et_plus.json"
    argv = ["--device-trace", str(traces / "rank0.kineto.json"), "--output-file", str(out),
            "--log-level", "ERROR"]  # fmt: skip
    assert _run(trace_link.main, argv) == 0
    link = json.loads(out.read_text())["chakra_link"]
    assert link["host_source"] == "kineto" and link["host_trace"] is None
    assert link["report"]["window"].startswith("ProfilerStep#1")  # the last of 0 and 1


def test_a_folder_of_kineto_traces_alone_is_a_job(
    tmp_path: Path, astra_sim: AstraSim, capsys: pytest.CaptureFixture[str]
) -> None:
    """Four ranks, two steps, every step: one .et per rank, each replayed within 1% of its
    measured makespan, and ASTRA-sim issues every node."""
    traces = _kineto_only_job(tmp_path / "traces", 4, 2)
    out = tmp_path / "run"
    argv = ["--trace-dir", str(traces), "--output-dir", str(out), "--profiler-step", "all",
            "--no-timeline", "--no-plot", "--no-what-if", "--log-level", "ERROR"]  # fmt: skip
    assert _run(pipeline.main, argv) == 0
    report = json.loads((out / "report.json").read_text())
    assert [r["rank"] for r in report["ranks"]] == [0, 1, 2, 3]
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith("host side made from the Kineto trace on 4 of 4 ranks (no host ET)")
    for rank in report["ranks"]:
        assert rank["link"]["host_source"] == "kineto" and rank["link"]["window"]["step"] is None
        assert abs(rank["simulation"]["error_pct"]) < 1.0
    groups = out / "workload.comm_groups.json"
    assert_astra_sim_ran_all(astra_sim.run(out / "workload", "--comm-groups", str(groups)))


def test_host_traces_for_some_ranks_only_is_an_error_naming_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = tmp_path / "traces"
    generate_job(SynthOptions(seed=5, ranks=2, steps=1, ops_per_step=40), traces)
    (traces / "rank1.host_et.json").unlink()
    argv = ["--trace-dir", str(traces), "--output-dir", str(tmp_path / "run")]
    assert _run(pipeline.main, argv) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "ranks [1] have a Kineto trace but no host trace" in err
    assert not (tmp_path / "run").exists()


def test_the_converter_takes_a_kineto_trace_as_the_pipeline_does(tmp_path: Path) -> None:
    """``chakra_converter PyTorch --input <Kineto trace>``: the same graph as the pipeline
    makes of it (no "this is a Kineto trace" refusal), and no ET+ left behind."""
    from chakra.cli import converter
    from chakra.et import read_et

    kineto = REPO_ROOT / "tests/data/pytorch213/kineto_only/single/shapes.kineto.json.gz"
    out = tmp_path / "out"
    out.mkdir()
    argv = ["PyTorch", "--input", str(kineto), "--output", str(out / "c.et"),
            "--log-level", "ERROR"]  # fmt: skip
    assert _run(converter.main, argv) == 0
    argv = ["--device-trace", str(kineto), "--output-dir", str(tmp_path / "run"),
            "--no-timeline", "--no-plot", "--no-what-if", "--log-level", "ERROR"]  # fmt: skip
    assert _run(pipeline.main, argv) == 0
    ours, theirs = read_et(out / "c.et")[1], read_et(tmp_path / "run" / "workload.0.et")[1]
    assert [(n.name, n.type) for n in ours] == [(n.name, n.type) for n in theirs]
    assert len(ours) > 600 and sorted(p.name for p in out.iterdir()) == ["c.et"]


def test_collectives_without_groups_that_cannot_meet_say_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kineto traces of the 1.0.1 era record no process group: five ranks in pairs and a
    single cannot be told apart from the Kineto traces alone. One line says so."""
    from chakra.synth import options_with_vintages

    traces = tmp_path / "traces"
    options = SynthOptions(seed=11, ranks=5, steps=2, ops_per_step=40)
    generate_job(options_with_vintages(options, ["legacy_1_0_1"]), traces)
    for host in traces.glob("*host_et*"):
        host.unlink()
    argv = ["--trace-dir", str(traces), "--output-dir", str(tmp_path / "run"),
            "--profiler-step", "all", "--no-timeline", "--no-plot", "--no-what-if",
            "--log-level", "ERROR"]  # fmt: skip
    assert _run(pipeline.main, argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "process group" in err[0] and "peer rank is unknown" in err[0], err


def test_gloo_collectives_take_their_size_from_the_recorded_shapes(tmp_path: Path) -> None:
    """torch 2.13's gloo writes no record_param_comms: with record_shapes, each collective's
    size is its input's shape times its element type (``[[1732]]`` of ``float``: 6,928
    bytes), read here from the raw events; before, comm_size 0."""
    from chakra.et import read_et

    kineto = REPO_ROOT / "tests/data/pytorch213/kineto_only/gloo_2rank/rank0.kineto.json.gz"
    widths = {"float": 4, "double": 8, "half": 2, "bfloat16": 2, "long": 8, "int": 4}
    expected = []
    for e in sorted((e for e in _events(kineto) if e.get("name", "").startswith("gloo:")),
                    key=lambda e: e["ts"]):  # fmt: skip
        (dims,), (dtype,) = e["args"]["Input Dims"], e["args"]["Input type"]
        count = 1
        for d in dims:
            count *= d
        expected.append(count * widths[dtype])
    out = tmp_path / "c.et"
    argv = ["PyTorch", "--input", str(kineto), "--output", str(out), "--log-level", "ERROR"]
    from chakra.cli import converter

    assert _run(converter.main, argv) == 0
    sizes = [next(a.uint64_val or a.int64_val for a in n.attr if a.name == "comm_size")
             for n in read_et(out)[1] if n.name.startswith("gloo:") and n.type == 7]  # fmt: skip
    assert sizes == expected[-len(sizes) :] and set(sizes) == {6928, 4}
