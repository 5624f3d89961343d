"""``chakra_timeline_visualizer``: microseconds, tracks, robust parsing, line-numbered errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from chakra.errors import ChakraError
from chakra.tools.log_timeline import complete_events, convert_log, timeline, track_of

LOG = """\
[info] starting simulation, issue count unknown
issue,sys->id=0,tick=1000,node->id=5,node->name=COMP_NODE
note: issue,a=1,b=2,c=3,d=not a record at line start
[00:01] [info] issue,sys->id=1,tick=500,node->id=7,node->name=aten::add, alpha=1
this line mentions callback but is no record
callback,sys->id=0,tick=3000,node->id=5,node->name=COMP_NODE
callback,sys->id=1,tick=2000,node->id=7,node->name=aten::add, alpha=1
"""


def timeline_cli(*args: str) -> subprocess.CompletedProcess:
    script = [sys.executable, "-m", "chakra.cli.timeline_visualizer"]
    return subprocess.run([*script, *args], capture_output=True, text=True, check=False)


def write_log(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sim.log"
    path.write_text(text)
    return path


def test_microseconds_and_tracks(tmp_path: Path) -> None:
    trace = convert_log(write_log(tmp_path, LOG), num_npus=2, frequency_mhz=1000)
    comp, add = complete_events(trace)
    assert (comp["pid"], comp["tid"], comp["ts"], comp["dur"]) == (0, 3, 1.0, 2.0)
    assert comp["name"] == "COMP_NODE" and comp["args"]["node_id"] == 5
    # 500 cycles at 1000 MHz = 0.5 us; 1500 cycles = 1.5 us; unknown names on track 5.
    assert (add["pid"], add["tid"], add["ts"], add["dur"]) == (1, 5, 0.5, 1.5)
    assert add["name"] == "aten::add, alpha=1"


def test_track_rules() -> None:
    assert track_of("MEM_LOAD_NODE LOCAL_MEMORY") == 1
    assert track_of("MEM_STORE_NODE REMOTE_MEMORY") == 2
    assert track_of("MEM_LOAD_NODE") == 2
    assert track_of("COMM_COLL_NODE_ALL_REDUCE") == 4
    assert track_of("ncclKernel") == 5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("callback,a=0,b=1,c=2,d=x\n", "sim.log:1: callback of node 2 on npu 0 without an issue"),
        ("\nissue,a=0,b=x,c=2,d=x\n", "sim.log:2: cycle 'x' is not an integer"),
        ("issue,a=3,b=1,c=2,d=x\n", "sim.log:1: npu id 3 is outside 0..1"),
        ("issue,a=0,b=1\n", "sim.log:1: a issue record needs 4 items"),
        ("issue,a=0,b=9,c=2,d=x\ncallback,a=0,b=1,c=2,d=x\n", "sim.log:2: callback at cycle 1"),
        ("nothing here\n", "no issue or callback record"),
    ],
)
def test_line_numbered_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ChakraError, match=message):
        convert_log(write_log(tmp_path, text), num_npus=2, frequency_mhz=1000)


def test_cli_log_and_error(tmp_path: Path) -> None:
    log, out = write_log(tmp_path, LOG), tmp_path / "out.json"
    result = timeline_cli("--input_filename", str(log), "--output_filename", str(out),
                          "--num_npus", "2", "--npu_frequency", "1500",
                          "--log_filename", str(tmp_path / "tool.log"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "wrote 2 events" in (tmp_path / "tool.log").read_text()
    events = complete_events(json.loads(out.read_text()))
    assert events[0]["ts"] == pytest.approx(1000 / 1500)
    bad = write_log(tmp_path, "issue,a=0,b=1,c=2,d=x\nissue,a=0,b=2,c=2,d=x\n")
    out.unlink()
    result = timeline_cli("--input_filename", str(bad), "--output_filename", str(out),
                          "--num_npus", "1", "--npu_frequency", "1000")  # fmt: skip
    assert result.returncode == 1
    assert "sim.log:2: node 2 of npu 0 issued again" in result.stderr
    assert not out.exists()


def test_chakra_sim_trace_passes_through(tmp_path: Path) -> None:
    source, out = tmp_path / "sim.json", tmp_path / "out.json"
    events = [{"ph": "X", "name": "mm", "pid": 0, "tid": 1, "ts": 1.5, "dur": 2.0}]
    source.write_text(json.dumps(events))
    result = timeline_cli("--input_filename", str(source), "--output_filename", str(out),
                          "--input-format", "chakra-sim")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text()) == {"traceEvents": events, "displayTimeUnit": "ms"}
    source.write_text('{"traceEvents": [{"ph": "X", "name": "a"}]}')
    with pytest.raises(ChakraError, match=r"traceEvents\[0\] has no numeric 'ts'"):
        timeline(source, "chakra-sim")
    with pytest.raises(ChakraError, match="needs --num_npus"):
        timeline(source, "astra-sim")
