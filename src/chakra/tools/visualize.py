"""Draw a Chakra ET's dependency graph: GraphML, Graphviz dot text, or a rendered image.

Each node is labelled with its short name, type, resource (thread or stream) and duration,
and filled by resource (:mod:`chakra.tools.visualize_style`: CPU threads in blues, GPU
streams a hue each, communication in reds; dot draws a legend of the fills). Its whole name
is dot's ``tooltip`` (shown on hover in SVG) and GraphML's ``name`` attribute. Data and
control dependencies stay distinct edges (a node pair can have both): GraphML uses a
multigraph whose edges carry ``dependency`` = ``data`` or ``control``; dot draws data deps
with normal arrows and control deps dashed with tee arrows. Only edges between selected nodes
are drawn. ``.dot`` and ``.graphml`` are written here; ``.pdf``, ``.svg`` and ``.png`` are
rendered by Graphviz's ``dot`` program, which must be on ``PATH``. Every output is atomic.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import networkx as nx

from chakra.errors import AttributeKindError, EtFormatError, PathLike, VisualizerError
from chakra.et import EtReader
from chakra.fileio import atomic_output
from chakra.tools.name_filter import compile_filter
from chakra.tools.visualize_style import (
    Placement,
    duration_us,
    fills,
    format_us,
    legend_text,
    node_type_name,
    placement,
    short_name,
)

logger = logging.getLogger(__name__)

#: Output formats written without Graphviz, and those rendered by its ``dot`` program.
TEXT_FORMATS = ("dot", "graphml")
RENDERED_FORMATS = ("pdf", "svg", "png")
DEFAULT_MAX_NODES = 2000
INSTALL_HINT = (
    "install Graphviz (e.g. `apt-get install graphviz`, `brew install graphviz` or"
    " `conda install graphviz`), or write .dot or .graphml instead"
)


@dataclass(frozen=True)
class VizNode:
    """What the drawing needs of one node: ``type`` is the ``NodeType`` name without
    ``_NODE``, ``duration_us`` from ``duration_ns`` when present."""

    id: int
    name: str
    data_deps: tuple[int, ...]
    ctrl_deps: tuple[int, ...]
    type: str
    place: Placement
    duration_us: float

    def label(self) -> str:
        """Three lines: short name; type and resource; duration."""
        where = f"{self.type} · {self.place.resource}" if self.place.resource else self.type
        return f"{short_name(self.name)}\n{where}\n{format_us(self.duration_us)}"


@dataclass(frozen=True)
class Selection:
    """Which nodes to draw: ids in ``[first, last]`` (inclusive, either end open when None)
    and names matching ``name_pattern`` (``re.search``; patterns that could take exponential
    time are refused: :mod:`chakra.tools.name_filter`)."""

    first: Optional[int] = None
    last: Optional[int] = None
    name_pattern: Optional[str] = None

    def matches(self, node_id: int, name: str, pattern: Optional[re.Pattern]) -> bool:
        if self.first is not None and node_id < self.first:
            return False
        if self.last is not None and node_id > self.last:
            return False
        return pattern is None or pattern.search(name) is not None


def parse_selection(id_range: Optional[str], name_pattern: Optional[str] = None) -> Selection:
    """The nodes of ``id_range``, ``"A:B"`` (inclusive bounds, either side may be empty;
    None: every id), whose names match ``name_pattern``."""
    if id_range is None:
        return Selection(None, None, name_pattern)
    text = id_range
    first, sep, last = text.partition(":")
    try:
        if not sep:
            raise ValueError
        bounds = (int(first) if first else None, int(last) if last else None)
    except ValueError:
        raise VisualizerError(f"id range {text!r} is not of the form A:B (e.g. 0:99)") from None
    if bounds[0] is not None and bounds[1] is not None and bounds[0] > bounds[1]:
        raise VisualizerError(f"id range {text!r} is empty: {bounds[0]} > {bounds[1]}")
    return Selection(*bounds, name_pattern)


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
    """Stream ``path`` and keep the selected nodes; more than ``max_nodes`` raises."""
    pattern = compile_filter(selection.name_pattern) if selection.name_pattern else None
    chosen = []
    with EtReader(path) as reader:
        for node in reader:
            if selection.matches(node.id, node.name, pattern):
                chosen.append(_viz_node(path, node))
                if len(chosen) > max_nodes:
                    raise VisualizerError(
                        f"{path} has more than {max_nodes} nodes to draw; select fewer with"
                        " --id-range or --name-filter, or raise --max-nodes"
                    )
    if not chosen:
        raise VisualizerError(f"no node of {path} matches the selection")
    return chosen


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
    whole name), ``type``, ``resource`` (empty: none), ``duration_us`` and ``fillcolor``;
    edge key and ``dependency`` attr = ``data`` or ``control``, so both kinds between one
    pair survive."""
    graph = nx.MultiDiGraph()
    colours = fills(node.place for node in nodes)
    for node in nodes:
        graph.add_node(
            node.id,
            label=node.label(),
            name=node.name,
            type=node.type,
            resource=node.place.resource or "",
            duration_us=node.duration_us,
            fillcolor=colours[node.place],
        )
    for dep, node_id, kind in _edges(nodes):
        graph.add_edge(dep, node_id, key=kind, dependency=kind)
    return graph


def dot_quote(text: str) -> str:
    """``text`` as a Graphviz double-quoted string that renders literally."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\r", "").replace("\n", "\\n") + '"'


def _dot_legend(colours: dict[Placement, str]) -> list[str]:
    """A dashed box holding one swatch per fill used, in :func:`fills`' order."""
    lines = ["  subgraph cluster_legend {", '    label="fill: resource"; style=dashed;']
    for k, (place, colour) in enumerate(colours.items()):
        text = dot_quote(legend_text(place))
        lines.append(f'    legend_{k} [label={text}, fillcolor="{colour}"];')
    lines.append("  }")
    return lines


def to_dot(nodes: Sequence[VizNode]) -> str:
    """Graphviz source: labelled, filled nodes with their whole name and id as tooltip; data
    deps as normal arrows, control deps as dashed tee arrows; a legend of the fills."""
    colours = fills(node.place for node in nodes)
    lines = ["digraph chakra_et {", "  node [shape=box, style=filled];"]
    for node in nodes:
        label, tooltip = dot_quote(node.label()), dot_quote(f"{node.name}\nid {node.id}")
        fill = colours[node.place]
        lines.append(f'  {node.id} [label={label}, tooltip={tooltip}, fillcolor="{fill}"];')
    for dep, node_id, kind in _edges(nodes):
        style = "arrowhead=normal" if kind == "data" else "arrowhead=tee, style=dashed"
        lines.append(f"  {dep} -> {node_id} [{style}];")
    lines.extend(_dot_legend(colours))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _render(source: str, fmt: str, dot_program: str, output: PathLike) -> None:
    try:
        done = subprocess.run(
            [dot_program, f"-T{fmt}"], input=source.encode(), capture_output=True, check=False
        )
    except OSError as exc:
        raise VisualizerError(f"cannot run Graphviz {dot_program}: {exc}") from exc
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        detail = reason[0] if reason else f"exit status {done.returncode}"
        raise VisualizerError(f"Graphviz dot failed to render {output}: {detail}")
    with atomic_output(output) as out:
        out.write(done.stdout)


def visualize(
    input_path: PathLike,
    output_path: PathLike,
    selection: Selection = Selection(),
    max_nodes: int = DEFAULT_MAX_NODES,
) -> int:
    """Draw the selected nodes of ``input_path`` into ``output_path`` (format from its
    extension); return the number of nodes drawn. Nothing is written on failure."""
    fmt = output_format(output_path)
    dot_program = None
    if fmt in RENDERED_FORMATS:
        dot_program = shutil.which("dot")
        if dot_program is None:
            raise VisualizerError(
                f"writing .{fmt} needs the Graphviz 'dot' program, not found on PATH; "
                + INSTALL_HINT
            )
    nodes = select_nodes(input_path, selection, max_nodes)
    if fmt == "graphml":
        graph = to_networkx(nodes)
        with atomic_output(output_path) as out:
            nx.write_graphml(graph, out)
    elif fmt == "dot":
        with atomic_output(output_path, text=True) as out:
            out.write(to_dot(nodes))
    else:
        assert dot_program is not None
        _render(to_dot(nodes), fmt, dot_program, output_path)
    return len(nodes)
