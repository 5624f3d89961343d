"""``--collapse-gpu``: each GPU stream's runs of consecutive ops become one node each, with
the dependencies of the run on the rest (checked against runs computed from the ``.et``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx

from chakra.et import (
    GlobalMetadata,
    Node,
    NodeType,
    add_attr,
    get_bool_attr,
    get_int_attr,
    write_et,
)
from tests.tools.conftest import Run, VizJob, run_visualizer

COMM = {NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE}


def visualizer(*args: object) -> Run:
    return run_visualizer(*args)


def _stream(node: Any) -> Any:
    """(device, stream) of a GPU op that is not communication; None for anything else."""
    on_host = get_bool_attr(node, "is_cpu_op", True) or get_bool_attr(node, "runs_on_host", False)
    stream = get_int_attr(node, "stream")
    if on_host or node.type in COMM or stream is None:
        return None
    return (get_int_attr(node, "device", 0), stream)


def expected_runs(nodes: list[Any]) -> list[list[Any]]:
    """Nodes in id order, consecutive GPU ops of one stream together."""
    runs: list[list[Any]] = []
    for node in sorted(nodes, key=lambda node: node.id):
        key = _stream(node)
        if runs and key is not None and _stream(runs[-1][-1]) == key:
            runs[-1].append(node)
        else:
            runs.append([node])
    return runs


def _duration_us(node: Any) -> float:
    nanos = get_int_attr(node, "duration_ns")
    return nanos / 1000 if nanos is not None else float(node.duration_micros)


def test_collapse_gpu_folds_each_streams_runs(viz_job: VizJob, tmp_path: Path) -> None:
    window = [node for node in viz_job.nodes[0] if 1000 <= node.id <= 1600]
    out = tmp_path / "g.graphml"
    result = visualizer("--input", viz_job.files[0], "--output", out, "--nodes", "1000-1600",
                        "--collapse-gpu")  # fmt: skip
    assert result.returncode == 0, result.stderr
    graph = nx.read_graphml(out, node_type=int, force_multigraph=True)
    runs = expected_runs(window)
    folded = [run for run in runs if len(run) > 1]
    assert len(folded) >= 5 and max(len(run) for run in folded) >= 10  # worth folding
    assert graph.number_of_nodes() == len(runs)
    for run in runs:
        attrs = graph.nodes[run[0].id]
        assert attrs["ops"] == len(run)
        assert attrs["last_id"] == (run[-1].id if len(run) > 1 else -1)
        assert abs(attrs["duration_us"] - sum(map(_duration_us, run))) < 1e-6
    owner = {node.id: run[0].id for run in runs for node in run}
    edges = set()
    for node in window:
        for kind, deps in (("data", node.data_deps), ("control", node.ctrl_deps)):
            edges |= {(owner[dep], owner[node.id], kind) for dep in deps if dep in owner}
    edges = {edge for edge in edges if edge[0] != edge[1]}  # inside a run: gone
    assert set(graph.edges(keys=True)) == edges
    assert graph.number_of_edges() == len(edges)


def _kernel(node_id: int, stream: int, *deps: int, node_type: int = NodeType.COMP_NODE) -> Node:
    node = Node(id=node_id, name=f"k{node_id}", type=node_type, duration_micros=node_id)
    node.data_deps.extend(deps)
    add_attr(node, "is_cpu_op", False)
    add_attr(node, "stream", stream)
    return node


def test_runs_end_at_anything_else_between_them(tmp_path: Path) -> None:
    """Host op 1 launches kernels 2-4 on stream 7; comm 5 on stream 7 ends the run, kernel 6
    follows alone; 7 and 8 run on stream 8; host op 9 waits for 8."""
    host = Node(id=1, name="aten::mm", type=NodeType.COMP_NODE, duration_micros=1)
    add_attr(host, "tid", 1)
    wait = Node(id=9, name="sync", type=NodeType.COMP_NODE, data_deps=[8], ctrl_deps=[1])
    nodes = [host, _kernel(2, 7, 1), _kernel(3, 7, 2, 1), _kernel(4, 7, 3),
             _kernel(5, 7, 4, node_type=NodeType.COMM_COLL_NODE), _kernel(6, 7, 5),
             _kernel(7, 8, 1), _kernel(8, 8, 7, 3), wait]  # fmt: skip
    path, out = tmp_path / "j.et", tmp_path / "g.graphml"
    write_et(path, GlobalMetadata(version="0.0.4"), nodes)
    result = visualizer("--input", path, "--output", out, "--collapse-gpu")
    assert result.returncode == 0, result.stderr
    graph = nx.read_graphml(out, node_type=int, force_multigraph=True)
    ops = {node_id: (attrs["ops"], attrs["last_id"]) for node_id, attrs in graph.nodes(data=True)}
    assert ops == {1: (1, -1), 2: (3, 4), 5: (1, -1), 6: (1, -1), 7: (2, 8), 9: (1, -1)}
    assert graph.nodes[2]["duration_us"] == 2 + 3 + 4
    assert graph.nodes[2]["label"] == "3 ops · ids 2-4\nCOMP · stream 7\n9 µs"
    assert sorted(graph.edges(keys=True)) == [
        (1, 2, "data"), (1, 7, "data"), (1, 9, "control"), (2, 5, "data"), (2, 7, "data"),
        (5, 6, "data"), (7, 9, "data"),
    ]  # fmt: skip
