"""No tool overwrites one of its inputs: an output at the input's path, a hard link to it or a
symbolic link to it is one line, status 1, before any work, and the input is unchanged."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.cli.conftest import Runner, Traces

KINETO = "{kineto}"
NPU = ["--num_npus", "2", "--npu_frequency", "1000"]

# (tool, input kind, input's name, output's path under tmp_path, arguments). In the "same"
# case the input itself lies at the output's path; else the output is a link to the input.
CASES = [
    ("jsonizer", "et", "g.et", "o/g.json", ["--input_filename", "{in}", "--output_filename",
                                            "{out}"]),
    ("visualizer", "et", "g.dot", "o/g.dot", ["--input_filename", "{in}", "--output_filename",
                                              "{out}"]),
    ("timeline_visualizer", "astra_log", "a.log", "o/t.json",
     ["--input_filename", "{in}", "--output_filename", "{out}", *NPU]),
    ("timeline_visualizer", "astra_log", "a.log", "o/t.log",
     ["--input_filename", "{in}", "--output_filename", "{tmp}/t.json", *NPU,
      "--log_filename", "{out}"]),
    ("converter", "et_plus", "e.json", "o/e.json", ["PyTorch", "--input", "{in}", "--output",
                                                    "{out}"]),
    ("converter", "et_plus", "e.json", "o/c.log",
     ["--log-filename", "{out}", "PyTorch", "--input", "{in}", "--output", "{tmp}/c.et"]),
    ("converter", "text", "w.1.et", "o/w.1.et",
     ["Text", "--input", "{in}", "--output", "{prefix}", "--num-npus", "2", "--num-passes", "1"]),
    ("sim", "et", "g.et", "o/g.json", ["{in}", "--timeline", "{out}"]),
    ("sim", "et", "g.png", "o/g.png", ["{in}", "--plot", "{out}"]),
    ("sim", "et", "g.svg", "o/g.svg", ["{in}", "--plot-makespans", "{out}"]),
    ("trace_link", "host", "h.json", "o/h.json",
     ["--chakra-host-trace", "{in}", "--chakra-device-trace", KINETO, "--output-file", "{out}"]),
    ("trace_link", "kineto", "k.json", "o/k.json",
     ["--chakra-host-trace", "{host}", "--chakra-device-trace", "{in}", "--output-file",
      "{out}"]),
    ("trace_link", "host", "h.json", "o/r.json",
     ["--chakra-host-trace", "{in}", "--chakra-device-trace", KINETO, "--output-file",
      "{tmp}/l.json", "--report", "{out}"]),
    ("trace_link", "host", "rank0.et_plus.json", "o/rank0.et_plus.json",
     ["--host-dir", "{indir}", "--device-dir", "{kinetodir}", "--output-dir", "{outdir}"]),
    ("pipeline", "host", "h.json", "o/timeline.json",
     ["--host-trace", "{in}", "--device-trace", KINETO, "--output-dir", "{outdir}"]),
    ("pipeline", "kineto", "k.json", "o/workload.0.et",
     ["--host-trace", "{host}", "--device-trace", "{in}", "--output-dir", "{outdir}"]),
]  # fmt: skip
KINDS = ("same", "hardlink", "symlink")


def _place(traces: Traces, tmp_path: Path, kind: str, case: tuple) -> tuple[Path, Path, dict]:
    """The input and the output of one case, and the arguments' fill-ins."""
    _, source, name, output, _ = case
    out = tmp_path / output
    out.parent.mkdir(parents=True)
    given = out if kind == "same" else tmp_path / "in" / name
    given.parent.mkdir(exist_ok=True)
    shutil.copy(getattr(traces, source), given)
    if kind == "hardlink":
        os.link(given, out)
    elif kind == "symlink":
        out.symlink_to(given)
    kinetodir = tmp_path / "kinetos"
    kinetodir.mkdir()
    shutil.copy(traces.kineto, kinetodir / "rank0.kineto.json")
    fill = {"in": given, "out": out, "outdir": out.parent, "indir": given.parent,
            "prefix": str(out).removesuffix(".1.et"), "kinetodir": kinetodir,
            "kineto": traces.kineto, "host": traces.host, "tmp": tmp_path}  # fmt: skip
    return given, out, fill


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[3]}" for c in CASES])
def test_an_output_that_is_an_input_is_refused(
    cli: Runner, traces: Traces, tmp_path: Path, case: tuple, kind: str
) -> None:
    given, out, fill = _place(traces, tmp_path, kind, case)
    before = given.read_bytes()
    listing = sorted(p.name for p in out.parent.iterdir())
    result = cli(case[0], *(arg.format(**fill) for arg in case[4]))
    result.one_line(1, "output would overwrite input")
    assert given.read_bytes() == before
    assert out.is_symlink() == (kind == "symlink")
    assert sorted(p.name for p in out.parent.iterdir()) == listing  # nothing written
    assert not [p for p in ("t.json", "c.et", "l.json") if (tmp_path / p).exists()]


def test_jsonizer_into_its_own_input_regression(cli: Runner, traces: Traces, tmp_path) -> None:
    """Reported: ``--input_filename x.et --output_filename x.et`` exited 0 and replaced the
    graph with its JSON rendering."""
    graph = tmp_path / "x.et"
    shutil.copy(traces.et, graph)
    line = cli("jsonizer", "--input_filename", graph, "--output_filename", graph).one_line(1)
    assert line == f"chakra_jsonizer: error: {graph}: output would overwrite input {graph}"
    assert graph.read_bytes() == traces.et.read_bytes()


def test_two_outputs_naming_one_file_are_refused(cli: Runner, traces: Traces, tmp_path) -> None:
    same = tmp_path / "both.png"
    cli("sim", traces.et, "--plot", same, "--plot-makespans", same).one_line(
        1, "given for two outputs"
    )
    assert not same.exists()


def test_an_output_beside_its_input_is_fine(cli: Runner, traces: Traces, tmp_path) -> None:
    graph = tmp_path / "x.et"
    shutil.copy(traces.et, graph)
    result = cli("jsonizer", "--input_filename", graph, "--output_filename", tmp_path / "x.json")
    assert result.status == 0, result.errors
    assert graph.read_bytes() == traces.et.read_bytes()
