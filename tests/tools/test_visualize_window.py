"""``chakra_visualizer``'s windows on a job of about 3,000 nodes per rank (the user guide's
size, which the whole-graph drawing refuses): each option draws exactly the nodes the
``.et`` says it should (checked with networkx on the file's own dependencies), and a window
renders to SVG, PDF and PNG through Graphviz."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx
import pytest

from tests.tools.conftest import Run, VizJob, run_visualizer


def visualizer(*args: object) -> Run:
    return run_visualizer(*args)


def drawn(path: Path) -> dict[int, dict]:
    """The nodes a GraphML output holds: id -> attributes."""
    return dict(nx.read_graphml(path, node_type=int, force_multigraph=True).nodes(data=True))


def test_the_job_is_too_big_to_draw_whole_and_the_refusal_names_the_windows(
    viz_job: VizJob, tmp_path: Path
) -> None:
    assert len(viz_job.nodes[0]) > 3000
    out = tmp_path / "g.dot"
    result = visualizer("--input", viz_job.files[0], "--output", out)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert "has more than 2,000 nodes to draw" in line
    for option in ("--nodes A-B", "--around NODE --depth K", "--collapse-gpu", "--name-filter"):
        assert option in line
    assert not out.exists()


def test_nodes_draws_the_id_range(viz_job: VizJob, tmp_path: Path) -> None:
    out = tmp_path / "g.graphml"
    result = visualizer("--input", viz_job.files[0], "--output", out, "--nodes", "100-399")
    assert result.returncode == 0, result.stderr
    expected = {node.id for node in viz_job.nodes[0] if 100 <= node.id <= 399}
    assert set(drawn(out)) == expected and len(expected) == 300
    result = visualizer("--input", viz_job.files[0], "--output", out, "--nodes=-9")
    assert set(drawn(out)) == {node.id for node in viz_job.nodes[0] if node.id <= 9}


def _centre(viz_job: VizJob) -> int:
    """A node in the middle of things: the first with at least two dependencies and two
    dependants."""
    graph = viz_job.graph
    return next(n for n in graph if graph.in_degree(n) >= 2 and graph.out_degree(n) >= 2)


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_around_draws_what_a_node_waits_for_and_what_waits_for_it(
    viz_job: VizJob, tmp_path: Path, depth: int
) -> None:
    centre = _centre(viz_job)
    out = tmp_path / "g.graphml"
    result = visualizer("--input", viz_job.files[0], "--output", out, "--around", centre,
                        "--depth", depth, "--max-nodes", 5000)  # fmt: skip
    assert result.returncode == 0, result.stderr
    graph = viz_job.graph
    upstream = nx.single_source_shortest_path_length(graph.reverse(), centre, cutoff=depth)
    downstream = nx.single_source_shortest_path_length(graph, centre, cutoff=depth)
    assert set(drawn(out)) == set(upstream) | set(downstream)
    if depth == 1:
        assert set(drawn(out)) == {centre, *graph.predecessors(centre), *graph.successors(centre)}


def test_around_a_missing_node_and_depth_alone(viz_job: VizJob, tmp_path: Path) -> None:
    out = tmp_path / "g.dot"
    result = visualizer("--input", viz_job.files[0], "--output", out, "--around", 10**9)
    assert result.returncode == 1 and f"has no node {10**9}" in result.stderr
    assert not out.exists()


def test_rank_picks_the_file_of_a_job(viz_job: VizJob, tmp_path: Path) -> None:
    out = tmp_path / "g.graphml"
    files = [viz_job.files[1], viz_job.files[0]]  # the order given does not matter
    result = visualizer("--input", *files, "--rank", 1, "--output", out, "--nodes", "3000-")
    assert result.returncode == 0, result.stderr
    durations = [
        {n.id: n.duration_micros for n in nodes if n.id >= 3000} for nodes in viz_job.nodes
    ]
    assert durations[0] != durations[1]  # the ranks differ there
    shown = {node_id: attrs["duration_us"] for node_id, attrs in drawn(out).items()}
    assert shown.keys() == durations[1].keys()
    result = visualizer("--input", *files, "--output", tmp_path / "h.dot", "--nodes", "0-9")
    assert result.returncode == 2 and "choose the one to draw with --rank R" in result.stderr
    result = visualizer("--input", *files, "--rank", 7, "--output", tmp_path / "h.dot")
    assert result.returncode == 1
    assert "--rank 7: no file given is rank 7" in result.stderr and "is rank 1" in result.stderr
    assert not (tmp_path / "h.dot").exists()


def _svg_node_titles(path: Path) -> list[str]:
    """The ``<title>`` of every node group Graphviz drew into an SVG."""
    ns = {"svg": "http://www.w3.org/2000/svg"}
    groups = ET.parse(path).getroot().iterfind(".//svg:g[@class='node']", ns)
    return [group.findtext("svg:title", namespaces=ns) for group in groups]


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_a_window_of_the_job_renders_to_svg_pdf_and_png_through_graphviz(
    viz_job: VizJob, tmp_path: Path
) -> None:
    centre = _centre(viz_job)
    svg = tmp_path / "g.svg"
    result = visualizer("--input", *viz_job.files, "--rank", 0, "--output", svg,
                        "--around", centre, "--depth", 2)  # fmt: skip
    assert result.returncode == 0, result.stderr
    graph = viz_job.graph
    expected = {
        *nx.single_source_shortest_path_length(graph.reverse(), centre, cutoff=2),
        *nx.single_source_shortest_path_length(graph, centre, cutoff=2),
    }
    titles = _svg_node_titles(svg)
    assert {int(title) for title in titles if title.isdigit()} == expected
    assert any(title.startswith("legend_") for title in titles)
    pdf, png = tmp_path / "g.pdf", tmp_path / "g.png"
    result = visualizer("--input", viz_job.files[0], "--output", pdf,
                        "--nodes", "1000-1600", "--collapse-gpu")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert pdf.read_bytes().startswith(b"%PDF-") and b"%%EOF" in pdf.read_bytes()[-32:]
    result = visualizer("--input", viz_job.files[0], "--output", png, "--around", centre)
    assert result.returncode == 0, result.stderr
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
