"""``chakra_converter Text`` through the installed script, both reference interfaces."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from chakra.et import read_et
from tests.text.helpers import COLL, row, write

MICRO = "MICRO\n1\nallreduce -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1048576 5\n"


def converter(*args: str) -> subprocess.CompletedProcess:
    script = [sys.executable, "-m", "chakra.cli.converter"]
    return subprocess.run([*script, *args], capture_output=True, text=True, check=False)


def test_both_interfaces_write_the_same_files(tmp_path: Path) -> None:
    source = write(tmp_path, MICRO)
    head = converter("Text", "--input", str(source), "--output", str(tmp_path / "head"),
                     "--num-npus", "2", "--num-passes", "3")  # fmt: skip
    assert head.returncode == 0, head.stderr
    old = converter("--input_type", "Text", "--input_filename", str(source),
                    "--output_filename", str(tmp_path / "old"), "--num_npus", "2",
                    "--num_passes", "3")  # fmt: skip
    assert old.returncode == 0, old.stderr
    for npu in range(2):
        written = tmp_path / f"head.{npu}.et"
        assert written.read_bytes() == (tmp_path / f"old.{npu}.et").read_bytes()
        _, nodes = read_et(written)
        assert [row(n) for n in nodes] == [
            (i, "COMM_COLL_NODE_allreduce_ALLREDUCE", COLL, 0, 1048576, []) for i in range(3)
        ]
    assert sorted(p.name for p in tmp_path.glob("*.et")) == [
        "head.0.et", "head.1.et", "old.0.et", "old.1.et"
    ]  # fmt: skip


def test_bad_workload_is_one_stderr_line(tmp_path: Path) -> None:
    source = write(tmp_path, MICRO.replace("5 ALLREDUCE", "5 ALLREDUCES"))
    result = converter("Text", "--input", str(source), "--output", str(tmp_path / "o"),
                       "--num-npus", "1", "--num-passes", "1")  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"chakra_converter: error: {source}: line 3: unknown wg comm type 'ALLREDUCES' "
        "(expected one of ALLREDUCE, ALLTOALL, ALLGATHER, REDUCESCATTER, NONE)"
    ]
    assert not list(tmp_path.glob("*.et"))
