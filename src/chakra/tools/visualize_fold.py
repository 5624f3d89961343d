"""``--collapse-gpu``: each GPU stream's runs of consecutive ops drawn as one node each.

Among the nodes drawn, in id order, a run is a longest stretch of GPU ops (compute or
memory nodes placed on a stream, :func:`chakra.tools.visualize_style.placement`; never
communication) of one stream with no other drawn node between them: the converter writes a
stream's kernels with consecutive ids, so a run is what the stream did between two events
that involve something else (a collective, another stream, a host op drawn in between).
A run of two or more becomes one node: its first op's id, ``ops`` its count, ``last_id``
its last op's id, its type when all share one (else ``mixed``), the sum of their durations,
and the dependencies of its ops on nodes outside it. Dependencies on any op of a run lead
to the run's node; those inside a run disappear.
"""

from __future__ import annotations

from collections.abc import Sequence

from chakra.tools.visualize_style import VizNode


def _is_gpu_op(node: VizNode) -> bool:
    return node.place.family == "gpu" and node.place.resource is not None


def gpu_runs(nodes: Sequence[VizNode]) -> list[list[VizNode]]:
    """``nodes`` in id order, cut into runs: each GPU op joins the run before it when that
    run is of the same stream and nothing else came between; every other node is a run of
    its own."""
    runs: list[list[VizNode]] = []
    for node in sorted(nodes, key=lambda node: node.id):
        last = runs[-1][-1] if runs else None
        if last is not None and _is_gpu_op(node) and _is_gpu_op(last) and last.place == node.place:
            runs[-1].append(node)
        else:
            runs.append([node])
    return runs


def _outside(deps: Sequence[int], owner: dict[int, int], own_id: int) -> tuple[int, ...]:
    """``deps`` led to their runs' nodes, without ``own_id`` and repeats, in order."""
    led = (owner.get(dep, dep) for dep in deps)
    return tuple(dict.fromkeys(dep for dep in led if dep != own_id))


def _folded(run: Sequence[VizNode], owner: dict[int, int]) -> VizNode:
    first, last = run[0], run[-1]
    types = {node.type for node in run}
    data = [dep for node in run for dep in node.data_deps]
    ctrl = [dep for node in run for dep in node.ctrl_deps]
    return VizNode(
        id=first.id,
        name=f"{len(run):,} ops on {first.place.resource}: {first.name} ... {last.name}",
        data_deps=_outside(data, owner, first.id),
        ctrl_deps=_outside(ctrl, owner, first.id),
        type=types.pop() if len(types) == 1 else "mixed",
        place=first.place,
        duration_us=sum(node.duration_us for node in run),
        ops=len(run),
        last_id=last.id,
    )


def collapse_gpu(nodes: Sequence[VizNode]) -> list[VizNode]:
    """``nodes`` with each GPU stream's runs (:func:`gpu_runs`) folded into one node each,
    in id order; single nodes keep their own ids, with deps on folded ops led to the run."""
    runs = gpu_runs(nodes)
    owner = {node.id: run[0].id for run in runs if len(run) > 1 for node in run}
    shown = []
    for run in runs:
        if len(run) > 1:
            shown.append(_folded(run, owner))
            continue
        node = run[0]
        data = _outside(node.data_deps, owner, node.id)
        ctrl = _outside(node.ctrl_deps, owner, node.id)
        shown.append(
            VizNode(node.id, node.name, data, ctrl, node.type, node.place, node.duration_us)
        )
    return shown
