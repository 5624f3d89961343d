"""Option values are checked while parsing (finite, positive, in range): one line, argparse's
status 2, before any work; outputs into a missing folder are one line, status 1, before any
work."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from chakra.cli.arg_types import MAX_NPUS
from chakra.text.convert import MAX_NODES_PER_NPU
from tests.cli.conftest import Runner, Traces

BIG = str(2**64)
NPU = ["--npu-frequency", "1000"]
TIMELINE = ["--input", "{astra_log}", "--output", "{tmp}/t.json"]
TEXT = ["Text", "--input", "{text}", "--output", "{tmp}/w"]

# (tool, arguments, what the error line says after "argument ")
CASES = [
    ("pipeline", ["--host-trace", "{host}", "--device-trace", "{kineto}", "--output-dir",
                  "{tmp}/o", "--max-memory", "nan"], "--max-memory: must be a finite number "
                                                    "above 0, not 'nan'"),
    ("pipeline", ["--trace-dir", "{tmp}", "--output-dir", "{tmp}/o", "-j", "0"], "-j/--jobs"),
    ("generator", ["--default-runtime", BIG, "--output-dir", "{tmp}"], "--default-runtime: "
                   "must be an integer from 0 to 9,223,372,036,854,775,807"),
    ("generator", ["--default-tensor-size", "-1", "--output-dir", "{tmp}"],
     "--default-tensor-size"),
    ("generator", ["--default-comm-size", BIG, "--output-dir", "{tmp}"], "--default-comm-size"),
    ("generator", ["--num-npus", "0", "--output-dir", "{tmp}"], "--num-npus"),
    # the reference's spelling: the error names the option as --help shows it
    ("generator", ["--num_npus", str(MAX_NPUS + 1), "--output-dir", "{tmp}"], "--num-npus"),
    ("timeline_visualizer", [*TIMELINE, "--num-npus", "100000000", *NPU],
     f"--num-npus: must be an integer from 1 to {MAX_NPUS:,}, not '100000000'"),
    ("timeline_visualizer", [*TIMELINE, "--num-npus", "2", "--npu-frequency", "inf"],
     "--npu-frequency: must be a finite number above 0"),
    ("converter", [*TEXT, "--num-npus", "2", "--num-passes", "100000000"],
     "--num-passes: must be an integer from 1 to 1,000,000, not '100000000'"),
    ("converter", [*TEXT, "--num-npus", "0", "--num-passes", "1"], "--num-npus"),
    ("converter", ["--input_type", "Text", "--input_filename", "{text}", "--output_filename",
                   "{tmp}/w", "--num_npus", "2", "--num_passes", "0"], "--num_passes"),
    ("trace_link", ["--host-trace", "{host}", "--device-trace", "{kineto}", "--output-file",
                    "{tmp}/l.json", "--strict", "--min-host-coverage", "1.5"],
     "--min-host-coverage: must be a finite number at least 0 and at most 1"),
    ("visualizer", ["--input_filename", "{et}", "--output_filename", "{tmp}/g.dot",
                    "--name-filter", ""], "an empty name pattern"),
    ("visualizer", ["--input_filename", "{et}", "--output_filename", "{tmp}/g.dot",
                    "--name_filter", "a" * 1001], "of 1,001 characters (at most 1,000)"),
    ("visualizer", ["--input_filename", "{et}", "--output_filename", "{tmp}/g.dot",
                    "--max-nodes", "0"], "--max-nodes"),
    ("synth", ["--out-dir", "{tmp}/o", "--cpu-factor", "nan"], "--cpu-factor"),
    ("synth", ["--out-dir", "{tmp}/o", "--seed", BIG], "--seed"),
]  # fmt: skip


def _fill(traces: Traces, tmp_path: Path) -> dict[str, object]:
    fields = ("host", "kineto", "et", "text", "astra_log")
    return {"tmp": tmp_path, **{name: getattr(traces, name) for name in fields}}


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1][-2]}" for c in CASES])
def test_an_option_out_of_range_is_a_usage_error(
    cli: Runner, traces: Traces, tmp_path: Path, case: tuple
) -> None:
    tool, template, expected = case
    fill = _fill(traces, tmp_path)
    result = cli(tool, *(arg.format(**fill) for arg in template))
    line = result.one_line(2, expected)
    assert line.startswith(f"chakra_{tool}") and ": error: argument " in line  # a subcommand
    assert result.errors[0].startswith(f"usage: chakra_{tool}")
    assert list(tmp_path.iterdir()) == []


def test_text_num_passes_100000000_no_longer_crashes_regression(traces, tmp_path) -> None:
    """Reported: ``chakra_converter Text ... --num-passes 100000000`` died of SIGSEGV: the
    whole graph is built in memory as protobuf messages, and protobuf's C allocator crashes
    when memory runs out. Now a usage error, at once."""
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "chakra.cli.converter", "Text", "--input",
                           str(traces.text), "--output", str(tmp_path / "w"), "--num-npus", "2",
                           "--num-passes", "100000000"], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 2, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("chakra_converter Text: error: argument --num-passes: must be")
    assert time.monotonic() - start < 60 and list(tmp_path.iterdir()) == []


def test_text_graph_over_the_node_cap_is_refused_after_one_pass(cli: Runner, traces, tmp_path):
    passes = MAX_NODES_PER_NPU // 10 + 1  # DATA.txt: 10 nodes per pass
    start = time.monotonic()
    cli("converter", "Text", "--input", traces.text, "--output", tmp_path / "w", "--num-npus",
        "1", "--num-passes", passes).one_line(
        1, f"{passes:,} passes of 10 nodes would make", f"than the {MAX_NODES_PER_NPU:,}"
    )  # fmt: skip
    assert time.monotonic() - start < 10 and list(tmp_path.iterdir()) == []


# (tool, arguments writing into {missing}, a folder that does not exist)
MISSING = [
    ("sim", ["{et}", "--plot", "{missing}/u.png"]),
    ("sim", ["{et}", "--plot-makespans", "{missing}/m.png"]),
    ("converter", ["--log-filename", "{missing}/c.log", "PyTorch", "--input", "{et_plus}",
                   "--output", "{tmp}/c.et"]),
    ("converter", ["--log_filename", "{missing}/c.log", *TEXT, "--num-npus", "1",
                   "--num-passes", "1"]),
    ("timeline_visualizer", [*TIMELINE, "--num_npus", "2", *NPU, "--log_filename",
                             "{missing}/t.log"]),
    ("timeline_visualizer", [*TIMELINE, "--num_npus", "2", *NPU, "--log-filename",
                             "{missing}/t.log"]),
    ("jsonizer", ["--input_filename", "{et}", "--output_filename", "{missing}/g.json"]),
    ("visualizer", ["--input_filename", "{et}", "--output_filename", "{missing}/g.dot"]),
    ("trace_link", ["--host-trace", "{host}", "--device-trace", "{kineto}", "--output-file",
                    "{tmp}/l.json", "--report", "{missing}/r.json"]),
    ("generator", ["--num_npus", "1", "--output-dir", "{missing}"]),
]  # fmt: skip


@pytest.mark.parametrize("case", MISSING, ids=[f"{c[0]}-{c[1][-1]}" for c in MISSING])
def test_an_output_into_a_missing_folder_is_one_line_before_work_regression(
    cli: Runner, traces: Traces, tmp_path: Path, case: tuple
) -> None:
    """Reported: ``--plot``, ``--log-filename`` and ``--log_filename`` into a missing folder
    ended in a traceback (after the work)."""
    tool, template = case
    fill = {**_fill(traces, tmp_path), "missing": tmp_path / "no", "et_plus": traces.et_plus}
    result = cli(tool, *(arg.format(**fill) for arg in template))
    result.one_line(1, str(tmp_path / "no"))
    assert list(tmp_path.iterdir()) == []
