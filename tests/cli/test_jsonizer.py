"""``chakra_jsonizer`` end to end, through the installed console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from chakra.et import GlobalMetadata, Node, write_et
from tests.et.samples import BAD_INPUT_NAMES, bad_inputs


def jsonizer(*args: str) -> subprocess.CompletedProcess:
    script = [sys.executable, "-m", "chakra.cli.jsonizer"]
    return subprocess.run([*script, *args], capture_output=True, text=True, check=False)


def test_writes_one_json_document(tmp_path: Path) -> None:
    source, out = tmp_path / "t.et", tmp_path / "t.json"
    write_et(source, GlobalMetadata(version="1"), [Node(id=4, name="x")])
    result = jsonizer("--input_filename", str(source), "--output_filename", str(out))
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text())["nodes"] == [{"id": "4", "name": "x"}]
    assert "wrote 1 nodes" in result.stderr


def test_jsonl_and_reference_prefix_abbreviations(tmp_path: Path) -> None:
    source, out = tmp_path / "t.et", tmp_path / "t.jsonl"
    write_et(source, GlobalMetadata(), [Node(id=1, name="a"), Node(id=2, name="b")])
    result = jsonizer("--input", str(source), "--output", str(out), "--jsonl")
    assert result.returncode == 0, result.stderr
    assert len(out.read_text().splitlines()) == 3


def test_missing_arguments_exit_2() -> None:
    result = jsonizer()
    assert result.returncode == 2
    assert "usage:" in result.stderr


def assert_one_line_error(result: subprocess.CompletedProcess, *expected: str) -> None:
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("chakra_jsonizer: error: ")
    assert "Traceback" not in result.stderr
    for text in expected:
        assert text in lines[0]


@pytest.mark.parametrize("case", BAD_INPUT_NAMES)
def test_bad_input_gives_one_line_status_1_and_no_output(tmp_path: Path, case: str) -> None:
    path, expected = bad_inputs(tmp_path)[case]
    out = tmp_path / "out.json"
    result = jsonizer("--input_filename", str(path), "--output_filename", str(out))
    assert_one_line_error(result, str(path), expected)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.json")]


def test_missing_input_file(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    missing = tmp_path / "absent.et"
    result = jsonizer("--input_filename", str(missing), "--output_filename", str(out))
    assert_one_line_error(result, f"cannot open {missing}: No such file or directory")
    assert not out.exists()


def test_unwritable_output_folder(tmp_path: Path) -> None:
    source = tmp_path / "t.et"
    write_et(source, GlobalMetadata(), [])
    out = tmp_path / "missing_dir" / "t.json"
    result = jsonizer("--input_filename", str(source), "--output_filename", str(out))
    assert_one_line_error(result, f"cannot write {out}")
