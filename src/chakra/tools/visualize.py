"""Draw a Chakra ET's dependency graph: GraphML, Graphviz dot text, or a rendered image.

The drawn nodes are a window of the job (:mod:`chakra.tools.visualize_window`: one rank's
file, an id range, a name pattern, a node's neighbourhood), optionally with each GPU
stream's runs folded (:mod:`chakra.tools.visualize_fold`). Each node is labelled with its
short name, type, resource (thread or stream) and duration, and filled by resource
(:mod:`chakra.tools.visualize_style`: CPU threads in blues, GPU streams a hue each,
communication in reds; dot draws a legend of the fills). Its whole name is dot's
``tooltip`` (shown on hover in SVG) and GraphML's ``name`` attribute. Data and control
dependencies stay distinct edges (a node pair can have both). Only edges between drawn
nodes are drawn.

The libraries, each for what it does best: networkx holds the drawn graph (a multigraph
whose edges carry ``dependency`` = ``data`` or ``control``) and writes GraphML; pydot turns
that graph into dot text (data deps normal arrows, control deps dashed with tee arrows, the
legend a cluster); the graphviz package runs Graphviz's ``dot`` program, which must be on
``PATH``, to render ``.pdf``, ``.svg`` and ``.png``. The three load only when a drawing
needs them (start-up and ``--help`` stay light). Every output is atomic: nothing is written
on failure.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from chakra.errors import AttributeKindError, EtFormatError, PathLike, VisualizerError
from chakra.et import EtReader
from chakra.fileio import atomic_output
from chakra.ingest.name_patterns import compile_name_pattern
from chakra.tools.option_values import DEFAULT_MAX_NODES, DEFAULT_MAX_RENDERED_NODES
from chakra.tools.visualize_fold import collapse_gpu
from chakra.tools.visualize_style import (
    VizNode,
    duration_us,
    fills,
    legend_text,
    node_type_name,
    placement,
)
from chakra.tools.visualize_window import Selection, neighbourhood

if TYPE_CHECKING:
    import networkx as nx
    import pydot

logger = logging.getLogger(__name__)

#: Output formats written without Graphviz, and those rendered by its ``dot`` program.
TEXT_FORMATS = ("dot", "graphml")
RENDERED_FORMATS = ("pdf", "svg", "png")
#: With --collapse-gpu, at most this many times the limit are read before folding.
FOLD_READ_FACTOR = 100
INSTALL_HINT = "install Graphviz (`apt-get install graphviz`), or write .dot or .graphml instead"
WINDOW_HINT = (
    "draw a window: --nodes A-B, --around NODE --depth K, --name-filter PATTERN (shell pattern),"
    " --collapse-gpu (GPU runs as one node each), or raise --max-nodes"
)


def output_format(path: PathLike) -> str:
    """The format named by the extension of ``path``; an unknown one raises."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in TEXT_FORMATS + RENDERED_FORMATS:
        known = ", ".join(TEXT_FORMATS + RENDERED_FORMATS)
        raise VisualizerError(
            f"unknown output extension {Path(path).suffix or '(none)'!r} of {path};"
            f" use one of {known}"
        )
    return suffix


def _viz_node(path: PathLike, node: Any) -> VizNode:
    """What the drawing needs of ``node``; an attribute of the wrong kind names the file."""
    try:
        shown = (node_type_name(node.type), placement(node), duration_us(node))
    except AttributeKindError as exc:
        raise EtFormatError(path, f"node {node.id} ({node.name}): {exc}") from None
    return VizNode(node.id, node.name, tuple(node.data_deps), tuple(node.ctrl_deps), *shown)


def select_nodes(path: PathLike, selection: Selection, max_nodes: int) -> list[VizNode]:
    """Stream ``path`` and keep the nodes of ``selection``'s window, folded when it says
    so; more than ``max_nodes`` to draw raises, naming the options that draw less."""
    pattern = compile_name_pattern(selection.name_pattern) if selection.name_pattern else None
    near = None
    if selection.around is not None:
        near = neighbourhood(path, selection.around, selection.depth)
    read_limit = max_nodes * FOLD_READ_FACTOR if selection.collapse_gpu else max_nodes
    chosen = []
    with EtReader(path) as reader:
        for node in reader:
            if (near is None or node.id in near) and selection.matches(node.id, node.name, pattern):
                chosen.append(_viz_node(path, node))
                if len(chosen) > read_limit:
                    _refuse(path, read_limit, selection)
    if not chosen:
        raise VisualizerError(f"no node of {path} matches the selection")
    if selection.collapse_gpu:
        chosen = collapse_gpu(chosen)
        if len(chosen) > max_nodes:
            _refuse(path, max_nodes, selection)
    return chosen


def _refuse(path: PathLike, limit: int, selection: Selection) -> None:
    what = "nodes to draw" if not selection.is_window() else "nodes in the window asked for"
    raise VisualizerError(f"{path} has more than {limit:,} {what}; {WINDOW_HINT}")


def _edges(nodes: Sequence[VizNode]) -> Iterable[tuple[int, int, str]]:
    """``(dep, node, kind)`` for every dependency between selected nodes."""
    present = {node.id for node in nodes}
    dropped = 0
    for node in nodes:
        for kind, deps in (("data", node.data_deps), ("control", node.ctrl_deps)):
            for dep in deps:
                if dep in present:
                    yield dep, node.id, kind
                else:
                    dropped += 1
    if dropped:
        logger.info("left out %d dependencies on nodes not drawn", dropped)


def to_networkx(nodes: Sequence[VizNode]) -> nx.MultiDiGraph:
    """A multigraph: node key = id with ``label`` (:meth:`VizNode.label`), ``name`` (the
    whole name), ``type``, ``resource`` (empty: none), ``duration_us``, ``ops`` (1, or a
    folded run's op count), ``last_id`` (a folded run's last op; -1: not folded) and
    ``fillcolor``; edge key and ``dependency`` attr = ``data`` or ``control``, so both
    kinds between one pair survive. The graph's ``legend`` lists (words, fill colour) pairs."""
    import networkx as nx

    graph = nx.MultiDiGraph()
    colours = fills(node.place for node in nodes)
    graph.graph["legend"] = [(legend_text(place), colour) for place, colour in colours.items()]
    for node in nodes:
        graph.add_node(
            node.id,
            label=node.label(),
            name=node.name,
            type=node.type,
            resource=node.place.resource or "",
            duration_us=node.duration_us,
            ops=node.ops,
            last_id=-1 if node.last_id is None else node.last_id,
            fillcolor=colours[node.place],
        )
    for dep, node_id, kind in _edges(nodes):
        graph.add_edge(dep, node_id, key=kind, dependency=kind)
    return graph


def dot_quote(text: str) -> str:
    """``text`` as a Graphviz double-quoted string that renders literally."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\r", "").replace("\n", "\\n") + '"'


def _legend(swatches: Sequence[tuple[str, str]]) -> pydot.Subgraph:
    """A dashed box holding one swatch per fill used, in :func:`fills`' order."""
    import pydot

    legend = pydot.Subgraph("cluster_legend", label=dot_quote("fill: resource"), style="dashed")
    for k, (words, colour) in enumerate(swatches):
        legend.add_node(pydot.Node(f"legend_{k}", label=dot_quote(words), fillcolor=colour))
    return legend


def to_pydot(graph: nx.MultiDiGraph) -> pydot.Dot:
    """:func:`to_networkx`'s graph as pydot's: labelled, filled boxes with the whole name and
    id as tooltip; data deps normal arrows, control deps dashed tee arrows; the legend.
    Every text is quoted here (:func:`dot_quote`), so pydot writes it as it is."""
    import pydot

    dot = pydot.Dot("chakra_et", graph_type="digraph")
    dot.set_node_defaults(shape="box", style="filled")
    for node_id, attrs in graph.nodes(data=True):
        ids = f"ids {node_id}-{attrs['last_id']}" if attrs["ops"] > 1 else f"id {node_id}"
        tooltip = dot_quote(f"{attrs['name']}\n{ids}")
        label, fill = dot_quote(attrs["label"]), dot_quote(attrs["fillcolor"])
        dot.add_node(pydot.Node(str(node_id), label=label, tooltip=tooltip, fillcolor=fill))
    for dep, node_id, kind in graph.edges(keys=True):
        style = (
            {"arrowhead": "normal"} if kind == "data" else {"arrowhead": "tee", "style": "dashed"}
        )
        dot.add_edge(pydot.Edge(str(dep), str(node_id), **style))
    dot.add_subgraph(_legend(graph.graph["legend"]))
    return dot


def to_dot(nodes: Sequence[VizNode]) -> str:
    """Graphviz source of ``nodes``: networkx's graph written by pydot (:func:`to_pydot`)."""
    return to_pydot(to_networkx(nodes)).to_string()


def _render(source: str, fmt: str, output: PathLike) -> None:
    """``source`` laid out and drawn by Graphviz's dot (through the graphviz package) into
    ``output``; dot's failure raises with its first line of error."""
    import graphviz

    try:
        image = graphviz.Source(source).pipe(format=fmt, quiet=True)
    except graphviz.ExecutableNotFound:
        raise VisualizerError(
            f"writing {output} needs the Graphviz 'dot' program, not found on PATH; " + INSTALL_HINT
        ) from None
    except graphviz.CalledProcessError as exc:
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
        lines = stderr.strip().splitlines()
        detail = lines[0] if lines else f"exit status {exc.returncode}"
        raise VisualizerError(f"Graphviz dot failed to render {output}: {detail}") from None
    with atomic_output(output) as out:
        out.write(image)


def default_max_nodes(output_path: PathLike) -> int:
    """The most nodes drawn into ``output_path`` unless told otherwise: fewer for formats
    that Graphviz lays out (see :data:`DEFAULT_MAX_RENDERED_NODES`)."""
    fmt = output_format(output_path)
    return DEFAULT_MAX_RENDERED_NODES if fmt in RENDERED_FORMATS else DEFAULT_MAX_NODES


def visualize(
    input_path: PathLike,
    output_path: PathLike,
    selection: Optional[Selection] = None,
    max_nodes: Optional[int] = None,
) -> int:
    """Draw the selected nodes of ``input_path`` into ``output_path`` (format from its
    extension; ``selection`` None: every node; ``max_nodes`` None: :func:`default_max_nodes`);
    return the number of nodes drawn (a folded run counts once). Nothing is written on
    failure."""
    fmt = output_format(output_path)
    if fmt in RENDERED_FORMATS and shutil.which("dot") is None:
        raise VisualizerError(
            f"writing .{fmt} needs the Graphviz 'dot' program, not found on PATH; " + INSTALL_HINT
        )
    limit = default_max_nodes(output_path) if max_nodes is None else max_nodes
    nodes = select_nodes(input_path, selection or Selection(), limit)
    if fmt == "graphml":
        graph = to_networkx(nodes)
        del graph.graph["legend"]  # GraphML holds no nested values; fillcolor is per node
        import networkx as nx

        with atomic_output(output_path) as out:
            nx.write_graphml(graph, out)
    elif fmt == "dot":
        with atomic_output(output_path, text=True) as out:
            out.write(to_dot(nodes))
    else:
        _render(to_dot(nodes), fmt, output_path)
    return len(nodes)
