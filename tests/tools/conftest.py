"""A synthetic 2-rank job of about 3,000 nodes per rank (the user guide's size), linked and
converted: ``job.0.et`` and ``job.1.et``, for the visualizer's windows."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from chakra.cli.visualizer import main
from chakra.convert import ConvertOptions, convert_file
from chakra.et import read_et
from chakra.link.batch import link_files
from chakra.link.linked_trace import LinkOptions
from chakra.synth import SynthOptions, generate_job


@dataclass(frozen=True)
class VizJob:
    """The job's two files, each rank's nodes as read back, and rank 0's dependency graph
    (an edge dep -> node for every data or control dependency) built independently of the
    visualizer."""

    files: tuple[Path, Path]
    nodes: tuple[list[Any], list[Any]]
    graph: nx.DiGraph


@pytest.fixture(scope="session")
def viz_job(tmp_path_factory: pytest.TempPathFactory) -> VizJob:
    folder = tmp_path_factory.mktemp("viz_job")
    job = generate_job(SynthOptions(seed=3, ranks=2), folder / "traces")
    files = []
    for rank in job.ranks:
        et_plus = folder / f"rank{rank.rank}.et_plus.json"
        link_files(rank.host_et, rank.kineto, et_plus, LinkOptions())
        files.append(folder / f"job.{rank.rank}.et")
        convert_file(et_plus, files[-1], ConvertOptions())
    nodes = tuple(read_et(path)[1] for path in files)
    graph = nx.DiGraph()
    for node in nodes[0]:
        graph.add_node(node.id)
        graph.add_edges_from((dep, node.id) for dep in [*node.data_deps, *node.ctrl_deps])
    return VizJob((files[0], files[1]), (nodes[0], nodes[1]), graph)


@dataclass(frozen=True)
class Run:
    """A tool's exit status and what it wrote."""

    returncode: int
    stdout: str
    stderr: str


def run_visualizer(*args: object) -> Run:
    """``chakra_visualizer ARGS`` in this process (its start-up, not under test here, costs
    a second a run): its exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([*map(str, args), "--log-level", "WARNING"])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return Run(code, out.getvalue(), err.getvalue())
