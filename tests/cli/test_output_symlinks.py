"""Every output of every tool, plots and logs included, is written to a temporary sibling and
renamed over its path: a symbolic link found there is replaced by the new file, and the file
it pointed to is left untouched."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli.conftest import Runner, Traces

OUTSIDE = b"a file outside the output folder\n"
NPU = ["--num_npus", "2", "--npu_frequency", "1000"]

# (tool, arguments, the outputs (under tmp_path/o) where a link is planted first)
CASES = [
    ("jsonizer", ["--input_filename", "{et}", "--output_filename", "{o}/g.json"], ["g.json"]),
    ("visualizer", ["--input_filename", "{et}", "--output_filename", "{o}/g.dot",
                    "--max-nodes", "100000"], ["g.dot"]),
    ("timeline_visualizer", ["--input_filename", "{astra_log}", "--output_filename", "{o}/t.json",
                             *NPU, "--log_filename", "{o}/t.log"], ["t.json", "t.log"]),
    ("converter", ["--log-filename", "{o}/c.log", "PyTorch", "--input", "{et_plus}",
                   "--output", "{o}/c.et"], ["c.et", "c.log"]),
    ("converter", ["--log_filename", "{o}/w.log", "Text", "--input", "{text}", "--output",
                   "{o}/w", "--num-npus", "2", "--num-passes", "1"],
     ["w.0.et", "w.1.et", "w.log"]),
    ("generator", ["--num_npus", "1", "--output-dir", "{o}"], ["ALL_REDUCE.0.et"]),
    ("synth", ["--out-dir", "{o}", "--ranks", "1", "--steps", "1", "--ops-per-step", "30"],
     ["rank0.kineto.json", "job.truth.json"]),
    ("sim", ["{et}", "--timeline", "{o}/t.json", "--plot", "{o}/u.png", "--plot-makespans",
             "{o}/m.svg"], ["t.json", "u.png", "m.svg"]),
    ("trace_link", ["--chakra-host-trace", "{host}", "--chakra-device-trace", "{kineto}",
                    "--output-file", "{o}/l.json", "--report", "{o}/r.json"],
     ["l.json", "r.json"]),
    ("trace_link", ["--host-dir", "{hosts}", "--device-dir", "{kinetos}", "--output-dir", "{o}",
                    "--report", "{o}/r.json"], ["rank0.et_plus.json", "r.json"]),
    ("pipeline", ["--host-trace", "{host}", "--device-trace", "{kineto}", "--output-dir", "{o}",
                  "--no-what-if"],
     ["timeline.json", "utilisation.png", "report.json", "report.html", "workload.0.et",
      "rank0.et_plus.json", "rank0.report.json"]),
]  # fmt: skip


def _fill(traces: Traces, tmp_path: Path) -> dict[str, Path]:
    hosts, kinetos = tmp_path / "hosts", tmp_path / "kinetos"
    hosts.mkdir()
    kinetos.mkdir()
    shutil.copy(traces.host, hosts / "rank0.host_et.json")
    shutil.copy(traces.kineto, kinetos / "rank0.kineto.json")
    fields = ("host", "kineto", "et_plus", "et", "text", "astra_log")
    return {"o": tmp_path / "o", "hosts": hosts, "kinetos": kinetos,
            **{name: getattr(traces, name) for name in fields}}  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[2][0]}" for c in CASES])
def test_a_symlink_at_an_output_is_replaced_not_followed(
    cli: Runner, traces: Traces, tmp_path: Path, case: tuple
) -> None:
    tool, template, planted = case
    fill = _fill(traces, tmp_path)
    fill["o"].mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_bytes(OUTSIDE)
    for name in planted:
        (fill["o"] / name).symlink_to(outside)
    result = cli(tool, *(arg.format(**fill) for arg in template))
    assert result.status == 0, result.errors
    assert outside.read_bytes() == OUTSIDE
    for name in planted:
        path = fill["o"] / name
        assert not path.is_symlink() and path.is_file(), name
        assert path.read_bytes() != OUTSIDE
    assert not [p for p in fill["o"].iterdir() if p.name.endswith(".partial")]


def test_sim_plot_through_a_symlink_regression(cli: Runner, traces: Traces, tmp_path) -> None:
    """Reported: ``chakra_sim --plot`` overwrote a symbolic link's target."""
    target, link = tmp_path / "precious.png", tmp_path / "u.png"
    target.write_bytes(OUTSIDE)
    link.symlink_to(target)
    assert cli("sim", traces.et, "--plot", link).status == 0
    assert target.read_bytes() == OUTSIDE and not link.is_symlink()
    assert link.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("flag", ["--log-filename", "--log_filename"])
def test_log_file_through_a_symlink_regression(
    cli: Runner, traces: Traces, tmp_path: Path, flag: str
) -> None:
    """Reported: the log files of chakra_converter and chakra_timeline_visualizer were
    written through a symbolic link at their path."""
    target, link = tmp_path / "precious.txt", tmp_path / "tool.log"
    target.write_bytes(OUTSIDE)
    for tool, args in (("converter", [flag, link, "PyTorch", "--input", traces.et_plus,
                                      "--output", tmp_path / "c.et"]),
                       ("timeline_visualizer", ["--input_filename", traces.astra_log,
                                                "--output_filename", tmp_path / "t.json",
                                                *NPU, flag, link])):  # fmt: skip
        link.unlink(missing_ok=True)
        link.symlink_to(target)
        assert cli(tool, *args).status == 0
        assert target.read_bytes() == OUTSIDE and link.is_file() and not link.is_symlink()


def test_a_failed_run_still_leaves_its_log(cli: Runner, traces: Traces, tmp_path) -> None:
    log = tmp_path / "t.log"
    missing = tmp_path / "missing.log"
    result = cli("timeline_visualizer", "--input_filename", missing, "--output_filename",
                 tmp_path / "t.json", *NPU, "--log_filename", log)  # fmt: skip
    assert result.status == 1
    assert log.read_text().splitlines()[-1].endswith(f"ERROR: cannot read {missing}: No such "
                                                     "file or directory")  # fmt: skip
    assert not (tmp_path / "t.json").exists()
