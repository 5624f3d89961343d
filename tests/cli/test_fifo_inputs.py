"""A FIFO (or any file that is not regular) given as an input is refused at once with one
line naming it and status 1 (issue "[security]": it blocked 11 tools forever, waiting for a
writer). No writer ever opens the FIFO here: a tool that opened it blocking would hang."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import chakra

SRC = str(Path(chakra.__file__).resolve().parents[1])
FIXTURE = Path(__file__).resolve().parents[1] / "data" / "pytorch213" / "single"
TIMEOUT_S = 20

# slow: one subprocess per tool (tests/fileio/test_regular.py is the quick check)
pytestmark = [
    pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here"),
    pytest.mark.slow,
]

#: tool -> arguments: ``{fifo}`` the FIFO, ``{out}`` an output folder, ``{host}`` and
#: ``{device}`` a real host ET and Kineto trace
CASES = {
    "trace_info": ["{fifo}"],
    "trace_link-host": ["--chakra-host-trace", "{fifo}", "--chakra-device-trace", "{device}",
                        "--output-file", "{out}/l.json"],
    "trace_link-device": ["--chakra-host-trace", "{host}", "--chakra-device-trace", "{fifo}",
                          "--output-file", "{out}/l.json"],
    "converter": ["PyTorch", "--input", "{fifo}", "--output", "{out}/c.et"],
    "converter-text": ["Text", "--input", "{fifo}", "--output", "{out}/w", "--num-npus", "2",
                       "--num-passes", "1"],
    "sim": ["{fifo}"],
    "validate": ["{fifo}"],
    "jsonizer": ["--input_filename", "{fifo}", "--output_filename", "{out}/j.json"],
    "visualizer": ["--input_filename", "{fifo}", "--output_filename", "{out}/g.dot"],
    "timeline_visualizer-log": ["--input_filename", "{fifo}", "--output_filename",
                                "{out}/t.json", "--num_npus", "1", "--npu_frequency", "1"],
    "timeline_visualizer-chrome": ["--input_filename", "{fifo}", "--output_filename",
                                   "{out}/t.json", "--input-format", "chakra-sim"],
    "pipeline": ["--host-trace", "{fifo}", "--device-trace", "{device}", "--output-dir",
                 "{out}/run", "--no-plot"],
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_fifo_input_is_one_line_and_status_1(tmp_path: Path, case: str) -> None:
    fifo, out = tmp_path / "input.fifo", tmp_path / "out"
    os.mkfifo(fifo)
    out.mkdir()
    tool = case.split("-")[0]
    argv = [a.format(fifo=fifo, out=out, host=FIXTURE / "host_et.json.gz",
                     device=FIXTURE / "kineto.json.gz") for a in CASES[case]]  # fmt: skip
    result = subprocess.run([sys.executable, "-m", f"chakra.cli.{tool}", *argv],
                            env={**os.environ, "PYTHONPATH": SRC}, capture_output=True,
                            text=True, timeout=TIMEOUT_S, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 1, result.stderr
    if tool == "validate":  # its report says which file failed, and why, on stdout
        assert (
            result.stdout == f"{fifo}: unreadable: a FIFO (named pipe), not a regular file: "
            "give a file's path\n"
        )
        assert result.stderr == "chakra_validate: error: 1 of 1 files failed validation\n"
        return
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"chakra_{tool}: error: ")
    assert str(fifo) in lines[0] and "FIFO" in lines[0]
    assert sorted(p.name for p in out.iterdir()) == []
