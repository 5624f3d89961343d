"""Dependency cycles of a graph given as edge arrays, found in linear time without
recursion (million-node chains and cycles are fine): Kahn's sort leaves the vertices on or
below a cycle, Tarjan's components among them are the cycles' regions, and one cycle is
walked in each region of two or more vertices. A self dep is not a cycle here (callers
report it on its own)."""

from __future__ import annotations

from array import array
from dataclasses import dataclass


@dataclass(frozen=True)
class Cycle:
    """One cycle: ``vertices`` each listing the next (and the last the first) among its
    parents; ``region``: the number of vertices of its strongly connected region."""

    vertices: tuple[int, ...]
    region: int


def find_cycles(count: int, parents: array, children: array) -> list[Cycle]:
    """One :class:`Cycle` per strongly connected region of two or more vertices of the graph
    on vertices ``0..count-1`` with an edge ``parents[i] -> children[i]`` for each ``i``, in
    the order of their smallest vertices; each is the one walked from that vertex along the
    first edge (in the edges' order) that stays in the region. So a search over a part of
    the graph that holds whole regions, numbered and ordered as in the graph, finds the same
    cycles."""
    starts, targets = _adjacency(count, parents, children)
    leftover = _unsorted_vertices(count, starts, targets, children)
    components = sorted(
        (c for c in _strong_components(leftover, starts, targets) if len(c) > 1), key=min
    )
    return [Cycle(tuple(_cycle_in(c, starts, targets)), len(c)) for c in components]


def _adjacency(count: int, parents: array, children: array) -> tuple[list[int], array]:
    """Compressed adjacency: the children of vertex v are ``targets[starts[v]:starts[v+1]]``."""
    starts = [0] * (count + 1)
    for parent in parents:
        starts[parent + 1] += 1
    for vertex in range(count):
        starts[vertex + 1] += starts[vertex]
    fill = starts[:-1]
    targets = array("q", bytes(8 * len(children)))
    for parent, child in zip(parents, children):
        targets[fill[parent]] = child
        fill[parent] += 1
    return starts, targets


def _unsorted_vertices(count: int, starts: list[int], targets: array, children: array) -> list[int]:
    """Kahn's topological sort; returns the vertices it cannot order (cycles and below)."""
    waiting = [0] * count
    for child in children:
        waiting[child] += 1
    ready = [vertex for vertex in range(count) if not waiting[vertex]]
    for vertex in ready:  # ``ready`` grows while iterated: a FIFO queue
        for index in range(starts[vertex], starts[vertex + 1]):
            child = targets[index]
            waiting[child] -= 1
            if not waiting[child]:
                ready.append(child)
    if len(ready) == count:
        return []
    return [vertex for vertex in range(count) if waiting[vertex]]


def _strong_components(vertices: list[int], starts: list[int], targets: array) -> list[list[int]]:
    """Tarjan's strongly connected components of the subgraph on ``vertices``, iteratively."""
    alive = set(vertices)
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    components = []
    for root in vertices:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, starts[root])]
        while work:
            vertex, edge = work[-1]
            end = starts[vertex + 1]
            while edge < end:
                child = targets[edge]
                edge += 1
                if child not in alive:
                    continue
                if child not in index:
                    work[-1] = (vertex, edge)
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, starts[child]))
                    break
                if child in on_stack:
                    low[vertex] = min(low[vertex], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[vertex])
                if low[vertex] == index[vertex]:
                    components.append(_pop_component(stack, on_stack, vertex))
    return components


def _pop_component(stack: list[int], on_stack: set[int], root: int) -> list[int]:
    """Pop Tarjan's stack down to ``root``: the vertices of ``root``'s component."""
    component = []
    while True:
        member = stack.pop()
        on_stack.discard(member)
        component.append(member)
        if member == root:
            return component


def _cycle_in(component: list[int], starts: list[int], targets: array) -> list[int]:
    """One cycle of a strongly connected component (of two or more vertices), as vertices
    each listing the next as a dep: walk children inside the component until one repeats,
    then reverse the walk. Each vertex is left at most once, so O(component edges)."""
    members = set(component)
    seen: dict[int, int] = {}
    path: list[int] = []
    vertex = min(component)
    while vertex not in seen:
        seen[vertex] = len(path)
        path.append(vertex)
        for edge in range(starts[vertex], starts[vertex + 1]):
            if targets[edge] in members:
                vertex = targets[edge]
                break
    return path[seen[vertex] :][::-1]
