"""Which part of a job ``chakra_visualizer`` draws: a window of a graph too big to draw whole.

A window is the file of one rank (:func:`rank_file`), an id range (:func:`parse_node_range`,
``--nodes A-B``), names matching a pattern, and the neighbourhood of one node
(:func:`neighbourhood`, ``--around NODE --depth K``: the node, the nodes it depends on
within K steps and the nodes depending on it within K steps, data and control dependencies
alike). The conditions given all hold for every node drawn. Folding each GPU stream's runs
of ops into one node each is :mod:`chakra.tools.visualize_fold`.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from chakra.errors import PathLike, UsageError, VisualizerError
from chakra.et import EtReader

#: ``A-B`` or ``A:B`` (inclusive; either end may be left out), or one id ``A``.
_RANGE = re.compile(r"^\s*(\d*)\s*[-:]\s*(\d*)\s*$")


@dataclass(frozen=True)
class NodeRange:
    """Ids from ``first`` to ``last``, both included (None: that end is open)."""

    first: Optional[int] = None
    last: Optional[int] = None

    def holds(self, node_id: int) -> bool:
        return (self.first is None or node_id >= self.first) and (
            self.last is None or node_id <= self.last
        )


def parse_node_range(text: str) -> NodeRange:
    """``"A-B"`` (or ``"A:B"``; either end may be left out) or ``"A"``: the ids A to B.
    Raises :class:`~chakra.errors.VisualizerError` for anything else or an empty range."""
    if text.strip().isdigit():
        return NodeRange(int(text), int(text))
    match = _RANGE.match(text)
    if match is None:
        raise VisualizerError(f"node range {text!r} is not of the form A-B (e.g. 0-499)")
    first, last = (int(end) if end else None for end in match.groups())
    if first is not None and last is not None and first > last:
        raise VisualizerError(f"node range {text!r} is empty: {first} > {last}")
    return NodeRange(first, last)


@dataclass(frozen=True)
class Selection:
    """Which nodes to draw: ids in ``[first, last]`` (inclusive, either end open when None),
    whole names matching the shell pattern ``name_pattern`` (as ``--scale`` takes them:
    :mod:`chakra.ingest.name_patterns`), and, when ``around`` is given, the
    nodes within ``depth`` dependency steps of node ``around``, upstream or downstream.
    ``collapse_gpu`` folds each GPU stream's runs of consecutive ops into one node each."""

    first: Optional[int] = None
    last: Optional[int] = None
    name_pattern: Optional[str] = None
    around: Optional[int] = None
    depth: int = 1
    collapse_gpu: bool = False

    @property
    def ids(self) -> NodeRange:
        return NodeRange(self.first, self.last)

    def is_window(self) -> bool:
        """Whether anything narrows or folds the graph."""
        return (
            self.first is not None
            or self.last is not None
            or self.name_pattern is not None
            or self.around is not None
            or self.collapse_gpu
        )

    def matches(self, node_id: int, name: str, pattern: Optional[re.Pattern]) -> bool:
        return self.ids.holds(node_id) and (pattern is None or pattern.match(name) is not None)


def neighbourhood(path: PathLike, centre: int, depth: int) -> frozenset[int]:
    """The ids of ``centre`` and the nodes of ``path`` within ``depth`` dependency steps of
    it, following dependencies (data or control) backwards or forwards, never both in one
    path: its ancestors and descendants up to ``depth`` steps, not their other children.
    Reads only ids and dependencies; a missing ``centre`` raises."""
    parents: dict[int, list[int]] = {}
    children: dict[int, list[int]] = {}
    with EtReader(path) as reader:
        for node in reader:
            deps = [*node.data_deps, *node.ctrl_deps]
            parents[node.id] = deps
            for dep in deps:
                children.setdefault(dep, []).append(node.id)
    if centre not in parents:
        raise VisualizerError(f"--around {centre}: {path} has no node {centre}")
    found = {centre}
    for edges in (parents, children):
        found |= _within(edges, centre, depth)
    return frozenset(found)


def _within(edges: dict[int, list[int]], start: int, depth: int) -> set[int]:
    """The nodes reached from ``start`` along ``edges`` in at most ``depth`` steps."""
    reached = {start}
    queue = deque([(start, 0)])
    while queue:
        node_id, steps = queue.popleft()
        if steps == depth:
            continue
        for other in edges.get(node_id, ()):
            if other not in reached:
                reached.add(other)
                queue.append((other, steps + 1))
    return reached


def rank_file(paths: Sequence[str], rank: Optional[int]) -> str:
    """The file of ``paths`` (a job's ``.et`` files) to draw: the one of ``rank`` (its
    metadata's rank, else its name's: ``PREFIX.<r>.et``), or the only one given. Several
    files without a rank, or a rank no file has, raise."""
    if rank is None:
        if len(paths) == 1:
            return paths[0]
        raise UsageError(
            f"{len(paths)} files given: choose the one to draw with --rank R"
            f" (files: {', '.join(paths[:4])}{', ...' if len(paths) > 4 else ''})"
        )
    from chakra.simulate.rank_order import ranked_file  # numpy: only when --rank is given

    ranks = {}
    for path in paths:
        held = ranked_file(path).rank
        if held == rank:
            return path
        ranks[path] = held
    known = ", ".join(
        f"{path} is rank {held}" if held is not None else f"{path} names no rank"
        for path, held in list(ranks.items())[:4]
    )
    raise VisualizerError(f"--rank {rank}: no file given is rank {rank} ({known})")
