"""``chakra_trace_info`` end to end, through the installed console script."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest


def trace_info(*args: str) -> subprocess.CompletedProcess:
    script = [sys.executable, "-m", "chakra.cli.trace_info"]
    return subprocess.run([*script, *args], capture_output=True, text=True, check=False)


def test_summarises_each_kind(shared_traces: Path) -> None:
    files = [shared_traces / "hta" / "simple_add.host_et.json.gz",
             shared_traces / "hta" / "simple_add.kineto.json.gz",
             shared_traces / "chakra" / "feeder_trace.et.gz"]  # fmt: skip
    result = trace_info("--json", *map(str, files))
    assert result.returncode == 0, result.stderr
    host, device, et = (json.loads(line) for line in result.stdout.splitlines())
    assert (host["kind"], host["ops"], host["schema"]) == ("host execution trace", 38, "1.0.1")
    assert (device["kind"], device["gpu_ops"], device["streams"]) == (
        "Kineto trace", {"kernel": 4}, [7])  # fmt: skip
    assert (et["kind"], et["nodes"]) == ("Chakra ET", 3664)


BAD = {
    "truncated.json": (b'{"traceEvents": [{"ph": "X", "ts": 1', "Input data was truncated"),
    "truncated.json.gz": (gzip.compress(b'{"traceEvents": []}')[:-6], "truncated gzip"),
    "neither.json": (b'{"hello": 1}', "neither a host execution trace nor a Kineto trace"),
    "empty.json": (b"", "empty file"),
    "bad_ts.json": (b'{"traceEvents": [{"ph": "X", "ts": "x"}]}', "got `str`"),
    "host_missing_keys.json": (b'{"schema": "1.0.1", "nodes": [{"id": 1}]}',
                               "missing required field `name`"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_one_line_status_1(tmp_path: Path, name: str) -> None:
    content, expected = BAD[name]
    path = tmp_path / name
    path.write_bytes(content)
    result = trace_info(str(path))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith(f"chakra_trace_info: error: {path}: ")
    assert expected in lines[0]


def test_missing_file(tmp_path: Path) -> None:
    result = trace_info(str(tmp_path / "nope.json"))
    assert result.returncode == 1
    assert "cannot open" in result.stderr and "No such file" in result.stderr
