"""``chakra_sim`` end to end on a hand-built graph: what is explained, and what-if rules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from chakra.et import GlobalMetadata, write_et
from tests.simulate.test_analysis import delay_graph


def sim(*args: str) -> subprocess.CompletedProcess:
    script = [sys.executable, "-m", "chakra.cli.sim"]
    return subprocess.run([*script, *args], capture_output=True, text=True, check=False)


@pytest.fixture
def et_file(tmp_path: Path) -> Path:
    # A (10) -> [delay] (5) -> B (10) on thread 1, an [idle] (3) beside it, a kernel (4)
    path = tmp_path / "rank0.et"
    write_et(path, GlobalMetadata(version="0.0.4"), delay_graph())
    return path


def test_json_says_what_is_explained_and_what_each_rule_scaled(et_file: Path) -> None:
    result = sim(str(et_file), "--json", "--scale", "cpu=0.5", "--scale", "delay=0")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    (rank,) = document["ranks"]
    assert (rank["simulated_makespan_us"], rank["measured_makespan_us"]) == (25.0, 25.0)
    assert (rank["model_only_makespan_us"], rank["model_only_error_pct"]) == (20.0, -20.0)
    assert rank["unexplained_us"] == 5.0
    # cpu=0.5 halves A and B only; delay=0 removes the delay; the idle (3) stays between
    # them on the thread: 5 + 3 + 5
    assert rank["what_if_makespan_us"] == 13.0
    assert document["scale_rules"] == [{"rule": "cpu=0.5", "nodes": 2},
                                       {"rule": "delay=0", "nodes": 1}]  # fmt: skip


def test_text_prints_model_only_line_and_rule_counts(et_file: Path) -> None:
    result = sim(str(et_file), "--scale", "[idle]=2")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "--scale [idle]=2: 1 nodes scaled (all ranks)"
    assert lines[1].endswith("simulated 25 us, measured 25 us, error +0.00%")
    assert lines[2] == ("  model only (delays and idle time zeroed) 20 us, error -20.00%; "
                        "unexplained on the critical path 5 us ([delay] 5 us)")  # fmt: skip
    assert lines[3].startswith("  what-if makespan 26 us")  # the idle (6) now outlasts the delay


@pytest.mark.parametrize(("rule", "status", "message"), [
    ("foo=2", 1, "--scale foo=2: matches no node"),
    ("cpus=2", 1, "--scale cpus=2: matches no node"),
    ("name:nB[1]@shape:[9,9]=2", 1, "--scale name:nB[1]@shape:[9,9]=2: matches no node"),
    # a rule that does not parse is a usage error, before any work
    ("gpu=-1", 2, "argument --scale: gpu=-1: factor must not be negative"),
    ("gpu=x", 2, "argument --scale: gpu=x: factor must be a number, e.g. compute=0.5"),
    ("B@shap:[1]=2", 2, "argument --scale: B@shap:[1]=2: unknown qualifier @shap: "
                        "(expected @shape:, @scope:, @rank: or @class:)"),
    ("B@shape:[1,a]=2", 2, "argument --scale: B@shape:[1,a]=2: @shape:[1,a] is not a shape"),
    ("B@rank:one=2", 2, "argument --scale: B@rank:one=2: @rank:one: expected @rank:0"),
])  # fmt: skip
@pytest.mark.slow
def test_bad_rules_are_one_line_errors(et_file: Path, tmp_path: Path, rule: str, status: int,
                                       message: str) -> None:  # fmt: skip
    timeline = tmp_path / "timeline.json"
    result = sim(str(et_file), "--scale", rule, "--timeline", str(timeline))
    assert result.returncode == status
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1 and errors[0].startswith(f"chakra_sim: error: {message}")
    if status == 1:
        assert result.stderr.splitlines() == errors
    else:  # argparse's usage line first
        assert result.stderr.startswith("usage: chakra_sim")
    assert result.stdout == "" and not timeline.exists()


def test_help_documents_the_targets() -> None:
    result = sim("--help")
    text = " ".join(result.stdout.split())
    for words in ("delay or idle", "name:TEXT", "[ and ] stand for themselves", "no node"):
        assert words in text


def test_astra_sim_resources(et_file: Path) -> None:
    # one CPU slot runs A (10), the [idle] (3: ready since 0, a smaller id than the
    # delay's), the [delay] (5) and B (10) one after the other; the kernel is on the GPU slot
    result = sim(str(et_file), "--resources", "astra-sim", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    (rank,) = document["ranks"]
    assert rank["simulated_makespan_us"] == 28.0
    assert [use["resource"] for use in rank["resources"]] == ["cpu slot", "gpu slot"]
    network = document["resources"]["network"]
    assert (network["bandwidth_gbps"], network["latency_ns"], network["npus"]) == (50, 500, 1)
    text = sim(str(et_file), "--resources", "astra-sim", "--network", "ring:100:2")
    assert text.stdout.splitlines()[0] == (
        "resources: astra-sim (per rank one cpu, gpu and "
        "comm slot; ring of 1 at 100 GB/s, 2000 ns per hop)"
    )


def test_astra_sim_resources_reject_serialize_gpu_and_switches(et_file: Path) -> None:
    conflict = sim(str(et_file), "--resources", "astra-sim", "--serialize-gpu")
    assert conflict.returncode == 2  # a usage error, after the usage line
    assert conflict.stderr.splitlines()[-1] == (
        "chakra_sim: error: --serialize-gpu: ASTRA-sim's model has one GPU slot per rank"
    )
    result = sim(str(et_file), "--resources", "astra-sim", "--network", "switch:10:1")
    assert result.returncode == 2  # options that do not go together: a usage error
    assert result.stderr.splitlines()[-1:] == [
        "chakra_sim: error: --resources astra-sim: the network must be a ring (as run.py's), "
        "not switch"
    ]


def test_help_documents_the_resource_models() -> None:
    text = " ".join(sim("--help").stdout.split())
    for words in ("threads-streams (default)", "ring:50:0.5", "50 GB/s and 500 ns"):
        assert words in text


def test_plot_makespans_draws_the_reported_values(
    et_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from matplotlib.figure import Figure

    from chakra.cli.sim import main

    saved: list[Figure] = []
    original = Figure.savefig

    def keep(figure: Figure, *args: object, **kwargs: object) -> None:
        saved.append(figure)
        original(figure, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    out = tmp_path / "makespans.png"
    with pytest.raises(SystemExit) as done:
        main([str(et_file), "--json", "--scale", "cpu=0.5", "--plot-makespans", str(out)])
    assert done.value.code == 0
    (rank,) = json.loads(capsys.readouterr().out)["ranks"]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (axis,) = saved[0].axes
    assert [t.get_text() for t in axis.get_legend().get_texts()] == [
        "measured", "replay", "model-only", "what-if"]  # fmt: skip
    heights = [[bar.get_height() for bar in bars] for bars in axis.containers]
    assert heights == [[rank["measured_makespan_us"]], [rank["simulated_makespan_us"]],
                       [rank["model_only_makespan_us"]], [rank["what_if_makespan_us"]]]  # fmt: skip
    assert heights == [[25.0], [25.0], [20.0], [15.0]]  # cpu=0.5: A 5, [delay] 5, B 5


@pytest.mark.parametrize("option", ["--plot", "--plot-makespans"])
@pytest.mark.slow
def test_plot_options_refuse_unknown_formats_and_missing_folders(
    et_file: Path, tmp_path: Path, option: str
) -> None:
    bad = sim(str(et_file), option, str(tmp_path / "u.xyz"))
    assert bad.returncode == 2  # a usage error, after the usage line, before any work
    errors = [line for line in bad.stderr.splitlines() if line.startswith("chakra_sim: error")]
    assert errors == [bad.stderr.splitlines()[-1]]
    assert errors[0].startswith(f"chakra_sim: error: argument {option}: {tmp_path}/u.xyz: "
                                "cannot draw a .xyz image; use one of ")  # fmt: skip
    assert "png" in errors[0] and "svg" in errors[0] and bad.stdout == ""
    timeline = tmp_path / "t.json"
    missing = sim(str(et_file), "--timeline", str(timeline), option, str(tmp_path / "no/u.png"))
    assert missing.returncode == 1
    assert missing.stderr.splitlines() == [
        f"chakra_sim: error: cannot write {tmp_path}/no/u.png: no folder {tmp_path}/no"
    ]
    assert missing.stdout == "" and not timeline.exists()
    svg = tmp_path / "u.svg"
    assert sim(str(et_file), option, str(svg)).returncode == 0
    assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()


def test_help_describes_the_plots() -> None:
    text = " ".join(sim("--help").stdout.split())
    assert "every host thread and GPU stream of each rank, simulated beside measured" in text
    assert "one time axis in µs" in text
    assert "--plot-makespans PATH" in text and "measured, replay, model-only" in text
