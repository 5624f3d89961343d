"""Link -> convert -> simulate on real and synthetic traces: simulated vs measured makespan."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chakra.convert import convert_file
from chakra.link import LinkOptions
from chakra.link.batch import link_files
from chakra.simulate import rank_results
from chakra.simulate.run import simulate_files
from chakra.synth import SynthOptions, generate_job


def pipeline(host: Path, device: Path, folder: Path, name: str) -> Path:
    et_plus, et = folder / f"{name}.et_plus.json", folder / f"{name}.et"
    link_files(host, device, et_plus, LinkOptions())
    convert_file(et_plus, et)
    return et


@pytest.mark.parametrize(("host", "device"), [
    ("hta/simple_add.host_et.json.gz", "hta/simple_add.kineto.json.gz"),
    ("param/linear.host_et.json.gz", "param/linear.kineto.json.gz"),
])  # fmt: skip
def test_real_traces_replay_and_say_what_is_unexplained(
    shared_traces: Path, tmp_path: Path, host, device
) -> None:
    """The replay meets the measured makespan by construction (delay nodes); what the
    graph explains on its own is the model-only makespan, never longer than the replay."""
    et = pipeline(shared_traces / host, shared_traces / device, tmp_path, "t")
    (result,) = rank_results(simulate_files([et]), explain=True)
    assert result.measured_makespan_us is not None
    assert abs(result.error_pct) < 5.0, result
    assert result.model_only_makespan_us <= result.simulated_makespan_us
    assert result.unexplained_us >= 0 and result.model_only_error_pct is not None


def test_synthetic_two_ranks_are_explained_by_their_graph(tmp_path: Path) -> None:
    """Every wait of a synthetic step is an edge: with every delay and idle node at zero,
    the graph alone still gets within 2% of the measured makespan. (Launch latencies and
    thread wake-ups are still delay nodes: on steps of a few ms they weigh more, -5.7% on
    two steps of 70 ops.)"""
    summary = generate_job(SynthOptions(seed=5, ranks=2, steps=1, ops_per_step=200), tmp_path)
    ets = [pipeline(r.host_et, r.kineto, tmp_path, f"rank{r.rank}") for r in summary.ranks]
    for result in rank_results(simulate_files(ets), explain=True):
        assert abs(result.model_only_error_pct) < 2.0, result
    # serialising all GPU work cannot make it faster
    serial = rank_results(simulate_files(ets, serialize_gpu=True))
    parallel = rank_results(simulate_files(ets))
    assert all(s.simulated_makespan_us >= p.simulated_makespan_us
               for s, p in zip(serial, parallel))  # fmt: skip


def sim(*args: str) -> subprocess.CompletedProcess:
    script = [sys.executable, "-m", "chakra.cli.sim"]
    return subprocess.run([*script, *args], capture_output=True, text=True, check=False)


def test_cli_json_timeline_and_bad_input(tmp_path: Path) -> None:
    summary = generate_job(SynthOptions(seed=1, ranks=1, ops_per_step=70), tmp_path)
    rank = summary.ranks[0]
    et_plus = tmp_path / "r.et_plus.json"
    link_files(rank.host_et, rank.kineto, et_plus, LinkOptions())
    timeline = tmp_path / "timeline.json"
    result = sim(str(et_plus), "--json", "--timeline", str(timeline))  # ET+ directly
    assert result.returncode == 0, result.stderr
    import json

    ranks = json.loads(result.stdout)["ranks"]
    assert ranks[0]["simulated_makespan_us"] > 0 and ranks[0]["measured_makespan_us"] > 0
    events = json.loads(timeline.read_text())["traceEvents"]
    # every node in one slice of the simulated process (an op with its later segments)
    shown = [e["args"]["node_id"] for e in events if e["ph"] == "X" and e["cat"] == "op"
             and e["pid"] == 0]  # fmt: skip
    shown += [i for e in events if e["ph"] == "X" and e["cat"] == "op" and e["pid"] == 0
              for i in e["args"].get("segment_ids", ())]  # fmt: skip
    assert len(shown) == len(set(shown)) == ranks[0]["nodes"]
    bad = tmp_path / "bad.et"
    from chakra.et import GlobalMetadata, Node, write_et

    write_et(bad, GlobalMetadata(), [Node(id=1, name="n1", data_deps=[7])])
    result = sim(str(bad))
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"chakra_sim: error: {bad}: rank 0: the graph fails chakra_validate")
    assert "(1 dangling_data_dep, 1 invalid_type)" in line
    assert "first: node 1 ('n1') has type 0, not a valid NodeType" in line
