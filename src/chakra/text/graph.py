"""Pure graph builders: one NPU's Chakra nodes for a parsed text workload.

Each parallelism type expands every pass into compute nodes (``COMP_NODE_<layer>_<phase>``)
and collectives (``COMM_COLL_NODE_<label>_<comm type>``) linked by ``data_deps`` as the reference
text converter does (reference §7.1), with its defects fixed: ids start at 0 for every graph,
every node carries ``is_cpu_op`` false, and a ``NONE`` comm type produces no node. Whatever
would have depended on such a missing collective depends on the collective's own dependencies
instead, so the ordering it implied is kept (the reference's DLRM path already falls back
from a missing weight-gradient collective to the weight-gradient compute this way).

A "handle" below is the tuple of node ids that a later node depends on to follow one step:
the node's own id for a real node, the skipped collective's dependencies for a ``NONE`` one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Callable, Optional

from chakra.errors import ChakraError
from chakra.et import Node, NodeType, add_attr
from chakra.text.workload import DLRM_TYPES, Parallelism, Phase, Workload

Handle = tuple[int, ...]
#: One pass of a parallelism type: (graph, workload, handles carried from the previous pass)
#: -> handles to carry into the next pass (one per layer).
PassBuilder = Callable[["_Graph", Workload, Sequence[Handle]], list[Handle]]


def _merge(handles: Sequence[Handle]) -> Handle:
    """The ids of ``handles`` in order, each once."""
    return tuple(dict.fromkeys(i for handle in handles for i in handle))


class _Graph:
    """Accumulates nodes with consecutive ids from 0."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []

    def _node(self, name: str, node_type: NodeType, deps: Sequence[Handle]) -> Node:
        node = Node(id=len(self.nodes), name=name, type=node_type)
        node.data_deps.extend(_merge(deps))
        self.nodes.append(node)
        return node

    def comp(self, layer: str, phase: str, duration_us: int, *deps: Handle) -> Handle:
        """Add ``COMP_NODE_<layer>_<phase>`` after ``deps``; return its handle."""
        node = self._node(f"COMP_NODE_{layer}_{phase}", NodeType.COMP_NODE, deps)
        node.duration_micros = duration_us
        add_attr(node, "is_cpu_op", False)
        return (node.id,)

    def coll(self, label: str, phase: Phase, *deps: Handle) -> Handle:
        """Add the collective of ``phase`` after ``deps``; for ``NONE`` add nothing and
        return ``deps`` merged, so that dependents wait for what it would have waited for."""
        collective = phase.collective
        if collective is None:
            return _merge(deps)
        name = f"COMM_COLL_NODE_{label}_{phase.comm_type}"
        node = self._node(name, NodeType.COMM_COLL_NODE, deps)
        add_attr(node, "comm_type", int(collective))
        add_attr(node, "comm_size", phase.comm_size_bytes)
        add_attr(node, "is_cpu_op", False)
        return (node.id,)


def _micro_pass(g: _Graph, w: Workload, carried: Sequence[Handle]) -> list[Handle]:
    """MICRO: one weight-gradient collective per layer, no compute, no dependencies."""
    return [g.coll(layer.name, layer.wg) for layer in w.layers]


def _data_pass(g: _Graph, w: Workload, wg_comm: Sequence[Handle]) -> list[Handle]:
    """DATA: forward chain of compute; backward WG compute, WG collective, IG compute.

    A layer's forward waits for its WG collective of the previous pass.
    """
    layers, fwd = w.layers, []
    for i, layer in enumerate(layers):
        fwd.append(
            g.comp(layer.name, "FWD", layer.fwd.comp_us, fwd[i - 1] if i else (), wg_comm[i])
        )
    carried: list[Handle] = [()] * len(layers)
    previous = fwd[-1]  # the last forward, then the IG compute of the layer processed before
    for i in reversed(range(len(layers))):
        layer = layers[i]
        wg = g.comp(layer.name, "BWD_WG", layer.wg.comp_us, previous)
        carried[i] = g.coll(layer.name, layer.wg, wg)
        if i != 0:
            previous = g.comp(layer.name, "BWD_IG", layer.ig.comp_us, wg)
    return carried


def _model_forward(g: _Graph, w: Workload, carried: Sequence[Handle], hybrid: bool) -> Handle:
    """Forward of MODEL and HYBRID_*: compute then FWD collective per layer, chained through
    the collectives; returns the last FWD collective's handle."""
    fwd_comm: Handle = ()
    for i, layer in enumerate(w.layers):
        before = fwd_comm if i else ()
        deps = (carried[i], before) if hybrid else (before, carried[i])
        comp = g.comp(layer.name, "FWD", layer.fwd.comp_us, *deps)
        fwd_comm = g.coll(layer.name, layer.fwd, comp)
    return fwd_comm


def _model_like_pass(
    g: _Graph, w: Workload, carried: Sequence[Handle], hybrid: bool, ig_suffix: str = ""
) -> list[Handle]:
    """MODEL (``hybrid`` false) and HYBRID_DATA_MODEL / HYBRID_MODEL_DATA (``hybrid`` true).

    Backward per layer, last first: IG compute (after the previous layer's WG compute and IG
    collective, or the last FWD collective), an IG collective except for reverse index
    ``declared_layers - 1``, WG compute, and for the hybrids a WG collective. MODEL carries WG
    compute handles into the next pass, the hybrids WG collective handles.
    """
    layers = w.layers
    prev_wg: Handle = ()
    prev_ig_comm = _model_forward(g, w, carried, hybrid)
    out: list[Handle] = [()] * len(layers)
    for r, i in enumerate(reversed(range(len(layers)))):
        layer = layers[i]
        ig = g.comp(layer.name, "BWD_IG", layer.ig.comp_us, prev_wg, prev_ig_comm)
        ig_comm: Handle = ()
        if r != w.declared_layers - 1:
            ig_comm = g.coll(layer.name + ig_suffix, layer.ig, ig)
        wg = g.comp(layer.name, "BWD_WG", layer.wg.comp_us, ig)
        out[i] = g.coll(layer.name, layer.wg, wg) if hybrid else wg
        prev_wg, prev_ig_comm = wg, ig_comm
    return out


def _dlrm_forward(g: _Graph, w: Workload, carried: Sequence[Handle]) -> Handle:
    """DLRM forward: chained compute; ALLTOALL layers add a FWD collective; the last bottom
    layer also waits for layer 0's FWD collective (or, when layer 0 has no ALLTOALL, for
    layer 0's FWD compute, which it already follows). Returns the last FWD compute."""
    comp: Handle = ()
    layer0: Handle = ()
    for i, layer in enumerate(w.layers):
        joins = layer0 if i == w.last_bottom_layer else ()
        comp = g.comp(layer.name, "FWD", layer.fwd.comp_us, carried[i], comp, joins)
        comm = comp
        if layer.fwd.comm_type == "ALLTOALL":
            comm = g.coll(layer.name, layer.fwd, comp)
        if i == 0:
            layer0 = comm
    return comp


def _dlrm_pass(g: _Graph, w: Workload, carried: Sequence[Handle]) -> list[Handle]:
    """HYBRID_DLRM / HYBRID_DLRM_ENHANCED: backward per layer, last first: WG compute, WG
    collective, IG compute (not for layer 0); after the IG compute of layer
    ``last_bottom_layer + 1`` comes layer 0's IG collective, which layer 0's WG compute waits
    for. Carries the WG collective (or WG compute, when the type is ``NONE``) of each layer."""
    layers, bottom = w.layers, w.last_bottom_layer
    previous = _dlrm_forward(g, w, carried)
    layer0_ig_comm: Handle = ()
    out: list[Handle] = [()] * len(layers)
    for i in reversed(range(len(layers))):
        layer = layers[i]
        joins = layer0_ig_comm if i == 0 else ()
        wg = g.comp(layer.name, "BWD_WG", layer.wg.comp_us, previous, joins)
        out[i] = g.coll(layer.name, layer.wg, wg)
        if i != 0:
            previous = g.comp(layer.name, "BWD_IG", layer.ig.comp_us, wg)
        if bottom is not None and i == bottom + 1:
            layer0_ig_comm = g.coll(layers[0].name, layers[0].ig, previous)
    return out


PASS_BUILDERS: dict[Parallelism, PassBuilder] = {
    Parallelism.MICRO: _micro_pass,
    Parallelism.DATA: _data_pass,
    Parallelism.MODEL: lambda g, w, c: _model_like_pass(g, w, c, hybrid=False),
    Parallelism.HYBRID_DATA_MODEL: lambda g, w, c: _model_like_pass(g, w, c, True, "_IG_COMM_"),
    Parallelism.HYBRID_MODEL_DATA: lambda g, w, c: _model_like_pass(g, w, c, hybrid=True),
    **{kind: _dlrm_pass for kind in DLRM_TYPES},
}


def build_npu_graph(
    workload: Workload, num_passes: int, max_nodes: Optional[int] = None
) -> list[Node]:
    """The nodes of one NPU for ``num_passes`` passes of ``workload``, ids 0, 1, ... in
    creation order. O(passes x layers). Raises ChakraError when ``num_passes`` < 1, or,
    right after the first pass (every pass adds as many nodes), when the graph would hold
    more than ``max_nodes`` nodes."""
    if num_passes < 1:
        raise ChakraError(f"num_passes must be at least 1, got {num_passes}")
    graph = _Graph()
    carried: Sequence[Handle] = [()] * len(workload.layers)
    builder = PASS_BUILDERS[workload.parallelism]
    for done in range(num_passes):
        carried = builder(graph, workload, carried)
        if done == 0 and max_nodes is not None and len(graph.nodes) * num_passes > max_nodes:
            raise ChakraError(
                f"{num_passes:,} passes of {len(graph.nodes):,} nodes would make "
                f"{len(graph.nodes) * num_passes:,} nodes per NPU, more than the "
                f"{max_nodes:,} a file may hold; ask for fewer passes"
            )
    return graph.nodes
