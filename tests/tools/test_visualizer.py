"""``chakra_visualizer``: both edge kinds kept, dot escaping, selection, refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

import networkx as nx
import pytest

from chakra.errors import ChakraError
from chakra.et import GlobalMetadata, Node, write_et
from chakra.tools.visualize import Selection, dot_quote, visualize


def visualizer(*args: str, env: Optional[dict] = None) -> subprocess.CompletedProcess:
    script = [sys.executable, "-m", "chakra.cli.visualizer"]
    return subprocess.run([*script, *args], capture_output=True, text=True, check=False, env=env)


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    nodes = [Node(id=0, name='load "x" {a|b} <c>'), Node(id=1, name="comp\\1")]
    nodes[1].data_deps.append(0)
    nodes[1].ctrl_deps.append(0)
    nodes.append(Node(id=2, name="tail", data_deps=[1], ctrl_deps=[99]))
    path = tmp_path / "t.et"
    write_et(path, GlobalMetadata(version="1.0.0"), nodes)
    return path


def test_graphml_keeps_data_and_control_edges(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.graphml"
    assert visualize(trace, out) == 3
    graph = nx.read_graphml(out, force_multigraph=True)
    kinds = sorted(d["dependency"] for _, _, d in graph.edges("0", data=True))
    assert kinds == ["control", "data"]
    assert graph.nodes["1"]["label"] == "comp\\1"
    assert graph.number_of_edges() == 3  # the dep on the missing id 99 is left out


def test_dot_escapes_labels_and_styles_edges(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.dot"
    result = visualizer("--input_filename", str(trace), "--output_filename", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert '0 [label="load \\"x\\" {a|b} <c>"' in text
    assert '1 [label="comp\\\\1"' in text
    assert "0 -> 1 [arrowhead=normal];" in text
    assert "0 -> 1 [arrowhead=tee, style=dashed];" in text
    assert dot_quote("a\nb") == '"a\\nb"'


def test_selection_by_id_range_and_name(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.graphml"
    visualize(trace, out, Selection(1, 2))
    assert sorted(nx.read_graphml(out).nodes) == ["1", "2"]
    visualize(trace, out, Selection(name_pattern="^(comp|tail)"))
    assert sorted(nx.read_graphml(out).nodes) == ["1", "2"]
    result = visualizer("--input_filename", str(trace), "--output_filename", str(out),
                        "--id-range", ":0")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert list(nx.read_graphml(out).nodes) == ["0"]
    with pytest.raises(ChakraError, match="no node"):
        visualize(trace, out, Selection(name_pattern="nothing"))


def test_max_nodes_refusal(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.dot"
    result = visualizer("--input_filename", str(trace), "--output_filename", str(out),
                        "--max-nodes", "2")  # fmt: skip
    assert result.returncode == 1
    assert "more than 2 nodes" in result.stderr and "--id-range" in result.stderr
    assert not out.exists()
    visualize(trace, out, Selection(0, 1), max_nodes=2)
    assert out.exists()


def test_pdf_without_dot_program(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.pdf"
    env = {**os.environ, "PATH": str(tmp_path / "empty")}
    result = visualizer("--input_filename", str(trace), "--output_filename", str(out), env=env)
    assert result.returncode == 1
    line = result.stderr.strip()
    assert "\n" not in line and "apt-get install graphviz" in line and "'dot'" in line
    assert list(tmp_path.iterdir()) == [trace]


def test_unknown_extension(trace: Path, tmp_path: Path) -> None:
    result = visualizer(
        "--input_filename", str(trace), "--output_filename", str(tmp_path / "g.jpg")
    )
    assert result.returncode == 1
    assert "unknown output extension '.jpg'" in result.stderr
    assert list(tmp_path.iterdir()) == [trace]


def test_rendered_formats_go_through_dot(
    trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "dot"
    fake.write_text('#!/bin/sh\necho "format $1"\nwhile IFS= read -r line; do echo "$line"; done\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    out = tmp_path / "g.svg"
    visualize(trace, out)
    assert out.read_text().startswith("format -Tsvg\ndigraph chakra_et {")
    fake.write_text("#!/bin/sh\necho 'syntax error' >&2\nexit 3\n")
    with pytest.raises(ChakraError, match="syntax error"):
        visualize(trace, tmp_path / "h.png")
    assert not (tmp_path / "h.png").exists()
