"""The whole pipeline: every output written, the timeline valid Perfetto JSON, the plot a PNG."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from chakra.pipeline import RankFiles, run_pipeline
from chakra.pipeline.rank_report import RankReport
from chakra.pipeline.run import summary_table
from chakra.synth import SynthOptions, generate_job

PNG = b"\x89PNG\r\n\x1a\n"


def assert_perfetto_json(path: Path, ranks: int) -> None:
    document = json.loads(path.read_text())
    events = document["traceEvents"]
    assert isinstance(events, list) and events
    for event in events:
        assert event["ph"] in ("X", "M", "s", "f") and "pid" in event and "name" in event
        if event["ph"] == "X":
            assert isinstance(event["ts"], (int, float)) and event["dur"] >= 0
            assert "tid" in event
    processes = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    simulated_pids = {e["pid"] for e in events if e["ph"] == "X"
                      and processes[e["pid"]].endswith("(simulated)")}  # fmt: skip
    assert simulated_pids == set(range(ranks))


def test_linear_one_rank(shared_traces: Path, tmp_path: Path) -> None:
    param = shared_traces / "param"
    result = run_pipeline([RankFiles(0, param / "linear.host_et.json.gz",
                                     param / "linear.kineto.json.gz")], tmp_path)  # fmt: skip
    for name in ("rank0.et_plus.json", "workload.0.et", "report.json", "timeline.json",
                 "utilisation.png"):  # fmt: skip
        assert (tmp_path / name).exists(), name
    assert_perfetto_json(result.timeline, 1)
    assert result.plot is not None and result.plot.read_bytes()[:8] == PNG
    (rank,) = json.loads(result.report.read_text())["ranks"]
    assert abs(rank["simulation"]["error_pct"]) < 5
    # the typed per-rank report is what report.json holds, converted at the writing edge
    (typed,) = result.ranks
    assert (
        isinstance(typed, RankReport)
        and typed.simulation.error_pct == rank["simulation"]["error_pct"]
    )
    assert json.loads(json.dumps(msgspec.to_builtins(typed))) == rank


@pytest.mark.slow
def test_four_synthetic_ranks_through_the_cli(tmp_path: Path) -> None:
    generate_job(SynthOptions(seed=3, ranks=4, ops_per_step=70, gzip=True), tmp_path / "traces")
    script = [sys.executable, "-m", "chakra.cli.pipeline"]
    out = tmp_path / "out"
    result = subprocess.run([*script, "--trace-dir", str(tmp_path / "traces"),
                             "--output-dir", str(out), "-j", "2", "--et-prefix", "step"],
                            capture_output=True, text=True, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # the job first (makespan, spread, a line per what-if), then the rank table and outputs
    table = next(k for k, line in enumerate(lines) if line.startswith("rank  "))
    assert lines[0].startswith("job: 4 ranks, makespan ") and len(lines) == table + 7
    # the PREFIX.<rank>.et family ASTRA-sim loads, its groups, and the command that runs them
    assert all(f"step.{r}.et" in {p.name for p in out.iterdir()} for r in range(4))
    groups = json.loads((out / "step.comm_groups.json").read_text())
    assert groups == {"1": [0, 1, 2, 3], "2": [0, 1], "3": [2, 3]}  # synth: world, then pairs
    assert lines[-1] == (
        f"ASTRA-sim: AstraSim_Analytical_Congestion_Unaware --workload-configuration={out}/step"
        f" --comm-group-configuration={out}/step.comm_groups.json --system-configuration="
        "SYSTEM.json --network-configuration=NETWORK.yml --remote-memory-configuration=MEMORY.json"
    )
    bad = subprocess.run([*script, "--trace-dir", str(tmp_path / "traces"), "--output-dir",
                          str(tmp_path / "bad"), "--et-prefix", "a/b"],
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert bad.returncode == 2  # a usage error (issue 32)
    assert "--et-prefix: 'a/b': a file name prefix, without '/'" in bad.stderr
    assert_perfetto_json(out / "timeline.json", 4)
    assert (out / "utilisation.png").read_bytes()[:8] == PNG
    report = json.loads((out / "report.json").read_text())
    assert [r["rank"] for r in report["ranks"]] == [0, 1, 2, 3]
    for rank in report["ranks"]:  # replayed; and what the graph alone explains is reported
        simulation = rank["simulation"]
        assert abs(simulation["error_pct"]) < 0.1
        assert simulation["model_only_makespan_us"] <= simulation["simulated_makespan_us"]
        assert simulation["unexplained_us"] >= 0


def test_missing_kineto_file_is_a_clear_error(tmp_path: Path) -> None:
    generate_job(SynthOptions(seed=3, ranks=2, ops_per_step=70), tmp_path / "traces")
    (tmp_path / "traces" / "rank1.kineto.json").unlink()
    script = [sys.executable, "-m", "chakra.cli.pipeline"]
    result = subprocess.run([*script, "--trace-dir", str(tmp_path / "traces"),
                             "--output-dir", str(tmp_path / "out")],
                            capture_output=True, text=True, check=False)  # fmt: skip
    assert result.returncode == 1
    assert "rank 1 has rank1.host_et.json but no Kineto trace" in result.stderr


def test_report_says_what_the_graph_explains(tmp_path: Path) -> None:
    generate_job(SynthOptions(seed=1, ranks=2, steps=1, ops_per_step=70), tmp_path / "traces")
    traces = tmp_path / "traces"
    ranks = [RankFiles(r, traces / f"rank{r}.host_et.json", traces / f"rank{r}.kineto.json")
             for r in range(2)]  # fmt: skip
    result = run_pipeline(ranks, tmp_path / "out", plot=False)
    report = json.loads(result.report.read_text())
    for entry in report["ranks"]:
        simulation = entry["simulation"]
        replay, alone = simulation["simulated_makespan_us"], simulation["model_only_makespan_us"]
        assert 0 < alone <= replay
        assert isinstance(simulation["unexplained_us"], float)
        assert 0 <= simulation["unexplained_us"] <= replay
        measured = simulation["measured_makespan_us"]
        assert simulation["model_only_error_pct"] == pytest.approx(
            100 * (alone - measured) / measured)  # fmt: skip
    header, *rows = summary_table(result).splitlines()
    assert header.split()[:10] == ["rank", "host", "ops", "linked", "GPU", "ops", "linked",
                                   "nodes", "model-only", "replay"]  # fmt: skip
    for row, entry in zip(rows, report["ranks"]):
        cells = row.split()
        assert cells[4] == f"{entry['simulation']['model_only_error_pct']:+.2f}%"
        assert cells[5] == f"{entry['simulation']['error_pct']:+.2f}%"
