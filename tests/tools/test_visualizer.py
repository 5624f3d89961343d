"""``chakra_visualizer``: short labels, fills by resource, both edge kinds kept, dot
escaping (written by pydot, read back by pydot), GraphML (networkx, read back by networkx),
rendering through the graphviz package, selection, refusals, the flags and their aliases."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Optional

import networkx as nx
import pydot
import pytest

from chakra.errors import ChakraError
from chakra.et import GlobalMetadata, Node, NodeType, add_attr, write_et
from chakra.tools.visualize import Selection, dot_quote, select_nodes, to_networkx, visualize
from chakra.tools.visualize_style import MAX_NAME_CHARS, PALETTES, Placement, VizNode, short_name
from tests.tools.conftest import run_visualizer


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
    assert graph.nodes["1"]["name"] == "comp\\1"
    assert graph.nodes["1"]["label"] == "comp\\1\nINVALID\n0 µs"
    assert graph.number_of_edges() == 3  # the dep on the missing id 99 is left out


def test_dot_escapes_labels_and_styles_edges(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.dot"
    result = visualizer("--input_filename", str(trace), "--output_filename", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert '0 [label="load \\"x\\" {a|b} <c>\\nINVALID\\n0 µs"' in text
    assert '1 [label="comp\\\\1\\nINVALID\\n0 µs", tooltip="comp\\\\1\\nid 1"' in text
    assert "0 -> 1 [arrowhead=normal];" in text
    assert "0 -> 1 [arrowhead=tee, style=dashed];" in text
    assert dot_quote("a\nb") == '"a\\nb"'
    with warnings.catch_warnings():  # pydot's parser uses pyparsing's old names
        warnings.simplefilter("ignore", DeprecationWarning)
        (parsed,) = pydot.graph_from_dot_data(text)  # pydot reads back what it wrote
    labels = {n.get_name(): n.get("label") for n in parsed.get_nodes() if n.get("label")}
    assert labels["1"] == '"comp\\\\1\\nINVALID\\n0 µs"'
    edges = sorted(
        (e.get_source(), e.get_destination(), e.get("arrowhead")) for e in parsed.get_edges()
    )
    assert edges == [("0", "1", "normal"), ("0", "1", "tee"), ("1", "2", "normal")]
    (legend,) = parsed.get_subgraph("cluster_legend")
    assert [n.get("label") for n in legend.get_nodes() if n.get("label")] == ['"no resource"']


def test_selection_by_id_range_and_name(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.graphml"
    visualize(trace, out, Selection(1, 2))
    assert sorted(nx.read_graphml(out).nodes) == ["1", "2"]
    visualize(trace, out, Selection(name_pattern="*a*"))  # 'load "x" ...' and "tail"
    assert sorted(nx.read_graphml(out).nodes) == ["0", "2"]
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
    assert "more than 2 nodes to draw" in result.stderr
    for option in ("--nodes A-B", "--around NODE --depth K", "--collapse-gpu", "--max-nodes"):
        assert option in result.stderr
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
    fake.write_text('#!/bin/sh\necho "args $*"\nwhile IFS= read -r line; do echo "$line"; done\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    out = tmp_path / "g.svg"
    visualize(trace, out)  # the graphviz package pipes pydot's text through `dot -Tsvg`
    assert out.read_text().startswith("args -Kdot -Tsvg\ndigraph chakra_et {")
    fake.write_text("#!/bin/sh\necho 'syntax error' >&2\nexit 3\n")
    with pytest.raises(ChakraError, match="syntax error"):
        visualize(trace, tmp_path / "h.png")
    assert not (tmp_path / "h.png").exists()


ADD_KERNEL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>,"
    " at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>,"
    " at::detail::Array<char*, 3>)"
)
REDUCE_KERNEL = (
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::"
    "func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()("
    "at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::"
    "ReduceOp<float, unsigned int, float, 4>)"
)


@pytest.mark.parametrize(("name", "short"), [
    (ADD_KERNEL, "vectorized_elementwise_kernel"),
    (REDUCE_KERNEL, "reduce_kernel"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, "
     "float, float const*)", "vectorized_layer_norm_kernel"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "ncclDevKernel_AllGather_RING_LL"),
    ("std::vector<int>::size() const", "size"),
    ("aten::add", "aten::add"),
    ("aten::add.Tensor", "aten::add.Tensor"),
    ("Memcpy HtoD (Pinned -> Device)", "Memcpy HtoD (Pinned -> Device)"),
    ("ProfilerStep#1", "ProfilerStep#1"),
    ("[delay]", "[delay]"),
    ("a < b", "a < b"),
    ("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_kernel",
     "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_…"),
])  # fmt: skip
def test_short_names(name: str, short: str) -> None:
    assert short_name(name) == short
    assert len(short_name(name)) <= MAX_NAME_CHARS


def _node(node_id: int, name: str, node_type: NodeType, micros: int, **attrs: object) -> Node:
    node = Node(id=node_id, name=name, type=node_type, duration_micros=micros)
    for key, value in attrs.items():
        add_attr(node, key, value)
    return node


@pytest.fixture
def job(tmp_path: Path) -> Path:
    comp, coll = NodeType.COMP_NODE, NodeType.COMM_COLL_NODE
    nodes = [
        _node(0, "aten::add", comp, 5, is_cpu_op=True, tid=1),
        _node(1, "aten::mul", comp, 3, is_cpu_op=True, tid=2, duration_ns=2500),
        _node(2, ADD_KERNEL, comp, 9, is_cpu_op=False, stream=7, duration_ns=8516),
        _node(3, REDUCE_KERNEL, comp, 1250, is_cpu_op=False, stream=8, device=1),
        _node(4, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
              coll, 40, is_cpu_op=False, stream=20),
        _node(5, "gloo:all_reduce", coll, 12, is_cpu_op=False, runs_on_host=True, tid=3),
        _node(6, "[delay]", comp, 2, is_cpu_op=True),
    ]  # fmt: skip
    nodes[2].data_deps.append(0)
    path = tmp_path / "job.et"
    write_et(path, GlobalMetadata(version="0.0.4"), nodes)
    return path


DOT_NODE = re.compile(r'^(\d+) \[label="(.*)", tooltip="(.*)", fillcolor="(#\w+)"\];$')
DOT_LEGEND = re.compile(r'^legend_\d+ \[label="(.*)", fillcolor="(#\w+)"\];$')


def test_labels_say_name_type_resource_duration_and_fills_say_resource(
    job: Path, tmp_path: Path
) -> None:
    out = tmp_path / "g.dot"
    result = visualizer("--input_filename", str(job), "--output_filename", str(out))
    assert result.returncode == 0, result.stderr
    lines = out.read_text().splitlines()
    drawn = {int(m[1]): m.groups()[1:] for m in map(DOT_NODE.match, lines) if m}
    labels = {node_id: label.split("\\n") for node_id, (label, _, _) in drawn.items()}
    assert labels == {
        0: ["aten::add", "COMP · thread 1", "5 µs"],
        1: ["aten::mul", "COMP · thread 2", "2.5 µs"],  # duration_ns wins
        2: ["vectorized_elementwise_kernel", "COMP · stream 7", "8.516 µs"],
        3: ["reduce_kernel", "COMP · d1 stream 8", "1,250 µs"],
        4: ["ncclDevKernel_AllReduce_Sum_f32_RING_LL", "COMM_COLL · stream 20", "40 µs"],
        5: ["gloo:all_reduce", "COMM_COLL · thread 3", "12 µs"],
        6: ["[delay]", "COMP", "2 µs"],  # no tid: holds no resource
    }
    assert drawn[2][1] == dot_quote(f"{ADD_KERNEL}\nid 2")[1:-1]  # the whole name on hover
    fill = {node_id: colour for node_id, (_, _, colour) in drawn.items()}
    assert fill[0] in PALETTES["cpu"] and fill[1] in PALETTES["cpu"] and fill[0] != fill[1]
    assert fill[2] in PALETTES["gpu"] and fill[3] in PALETTES["gpu"] and fill[2] != fill[3]
    assert fill[4] in PALETTES["comm"] and fill[5] in PALETTES["comm"] and fill[4] != fill[5]
    assert fill[6] == "#ffffff"
    legend = [m.groups() for m in map(DOT_LEGEND.match, lines) if m]
    assert legend == [
        ("communication on thread 3", fill[5]), ("communication on stream 20", fill[4]),
        ("CPU thread 1", fill[0]), ("CPU thread 2", fill[1]), ("no resource", fill[6]),
        ("GPU stream 7", fill[2]), ("GPU d1 stream 8", fill[3]),
    ]  # fmt: skip
    assert "0 -> 2 [arrowhead=normal];" in lines and "subgraph cluster_legend {" in out.read_text()

    graphml = tmp_path / "g.graphml"
    assert visualize(job, graphml) == 7
    node = nx.read_graphml(graphml, force_multigraph=True).nodes
    assert node["2"] == {"label": "vectorized_elementwise_kernel\nCOMP · stream 7\n8.516 µs",
                         "name": ADD_KERNEL, "type": "COMP", "resource": "stream 7",
                         "duration_us": 8.516, "ops": 1, "last_id": -1,
                         "fillcolor": fill[2]}  # fmt: skip
    assert (node["6"]["resource"], node["5"]["fillcolor"]) == ("", fill[5])


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_real_graphviz_renders_labels_tooltips_and_legend(job: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.svg"
    visualize(job, out)
    svg = out.read_text()
    assert 'xlink:title="void at::native::vectorized_elementwise_kernel&lt;4,' in svg
    assert ">vectorized_elementwise_kernel</text>" in svg and ">COMP · stream 7</text>" in svg
    assert ">GPU d1 stream 8</text>" in svg and "<title>cluster_legend</title>" in svg


def test_graphml_round_trips_through_networkx(job: Path, tmp_path: Path) -> None:
    """The GraphML networkx writes reads back, by networkx, as the graph it was made from."""
    out = tmp_path / "g.graphml"
    visualize(job, out)
    back = nx.read_graphml(out, node_type=int, force_multigraph=True)
    made = to_networkx(select_nodes(job, Selection(), max_nodes=100))
    del made.graph["legend"]
    assert dict(back.nodes(data=True)) == dict(made.nodes(data=True))
    assert sorted(back.edges(keys=True, data=True)) == sorted(made.edges(keys=True, data=True))


def test_help_shows_hyphen_flags_and_reference_spellings_still_work(
    job: Path, tmp_path: Path
) -> None:
    """--input/--output and the window options are what --help shows; the reference's
    --input_filename/--output_filename and the underscore spellings still work, hidden;
    no prefix of an option is taken (allow_abbrev=False)."""
    shown = run_visualizer("--help")
    assert shown.returncode == 0
    for flag in ("--input FILE", "--output FILE", "--rank", "--nodes A-B", "--around NODE",
                 "--depth K", "--collapse-gpu", "--name-filter", "--max-nodes"):  # fmt: skip
        assert flag in shown.stdout, flag
    for hidden in ("--input_filename", "--output_filename", "_range", "--name_filter",
                   "--max_nodes", "--id-range"):  # fmt: skip
        assert hidden not in shown.stdout, hidden
    spellings = [
        ["--input", str(job), "--output", "{out}", "--nodes", "1-3"],
        ["--input_filename", str(job), "--output_filename", "{out}", "--id_range", "1:3"],
        ["--input", str(job), "--output_filename", "{out}", "--id-range", "1:3",
         "--max_nodes", "3", "--name_filter", "*"],
    ]  # fmt: skip
    for k, args in enumerate(spellings):
        out = tmp_path / f"g{k}.graphml"
        result = run_visualizer(*(str(out) if arg == "{out}" else arg for arg in args))
        assert result.returncode == 0, result.stderr
        assert sorted(nx.read_graphml(out).nodes) == ["1", "2", "3"]
    abbreviated = run_visualizer("--inp", str(job), "--out", str(tmp_path / "a.dot"))
    assert abbreviated.returncode == 2 and "required" in abbreviated.stderr
    both = run_visualizer("--input", str(job), "--input_filename", str(job), "--output", "x.dot")
    assert both.returncode == 2 and "not allowed with" in both.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--nodes", "9-3"], "is empty: 9 > 3"),
    (["--nodes", "a-b"], "is not of the form A-B"),
    (["--depth", "-1", "--around", "0"], "--depth"),
    (["--depth", "2"], "--depth counts steps from --around's node"),
    (["--rank", "x"], "--rank"),
])  # fmt: skip
def test_bad_window_values_are_usage_errors(
    job: Path, tmp_path: Path, args: list, message: str
) -> None:
    out = tmp_path / "g.dot"
    result = run_visualizer("--input", str(job), "--output", str(out), *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


def test_viz_node_label_of_a_folded_run() -> None:
    place = Placement("gpu", "stream 7", (1, 0, 7))
    run = VizNode(5, "3 ops", (), (), "COMP", place, 12.5, ops=3, last_id=9)
    assert run.label() == "3 ops · ids 5-9\nCOMP · stream 7\n12.5 µs"


def test_dot_text_comes_from_pydot_and_images_from_the_graphviz_package(
    trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's "Dependencies and why": pydot writes the dot text, the graphviz package
    renders (networkx's GraphML: test_graphml_round_trips_through_networkx)."""
    import graphviz

    monkeypatch.setattr(pydot.Dot, "to_string", lambda self: "digraph from_pydot {}\n")
    visualize(trace, tmp_path / "g.dot")
    assert (tmp_path / "g.dot").read_text() == "digraph from_pydot {}\n"
    piped = []

    def pipe(source: graphviz.Source, format: str, quiet: bool) -> bytes:
        piped.append((source.source, format))
        return b"drawn by graphviz"

    monkeypatch.setattr(graphviz.Source, "pipe", pipe)
    monkeypatch.setattr(shutil, "which", lambda program: f"/usr/bin/{program}")
    visualize(trace, tmp_path / "g.pdf")
    assert (tmp_path / "g.pdf").read_bytes() == b"drawn by graphviz"
    assert piped == [("digraph from_pydot {}\n", "pdf")]


def test_legend_lists_every_resource_when_fills_repeat(tmp_path: Path) -> None:
    """Seven threads share five blues: the legend still has a swatch for each."""
    threads = 7
    nodes = [_node(k, f"op{k}", NodeType.COMP_NODE, 1, tid=k) for k in range(threads)]
    path, out = tmp_path / "t.et", tmp_path / "g.dot"
    write_et(path, GlobalMetadata(version="0.0.4"), nodes)
    visualize(path, out)
    legend = [m.groups() for m in map(DOT_LEGEND.match, out.read_text().splitlines()) if m]
    assert [words for words, _ in legend] == [f"CPU thread {k}" for k in range(threads)]
    assert len({colour for _, colour in legend}) == len(PALETTES["cpu"])
