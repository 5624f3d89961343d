"""The work budget of ``chakra_converter Text``: what the files would hold, estimated from two
passes of the workload, checked before any graph is built or any file written.

A text conversion writes ``num_npus`` identical files of ``num_passes`` passes each, so a
two-line workload can ask for 65,536 files of a million nodes (terabytes). Every pass adds
the same nodes, so two passes tell it all: the node count is exact, and the size of a file is
bounded from above by that of its first pass plus ``num_passes - 1`` times its second pass
with the ids and dependencies moved to where the last pass would put them (ids only grow, and
a larger id never takes fewer bytes). The estimate is within a few per cent above the file.

Three limits, each with the option that raises it: the nodes of all files together
(:data:`DEFAULT_MAX_NODES`, ``--max-nodes``), their bytes (:data:`DEFAULT_MAX_OUTPUT_BYTES`,
``--max-output-bytes``), and the space free in the output folder. The nodes of one file are
capped at :data:`MAX_NODES_PER_NPU` whatever the budget: a file is built in memory.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from chakra.errors import ChakraError, FileAccessError, PathLike
from chakra.et import GlobalMetadata, Node
from chakra.et.framing import encode_varint
from chakra.text.graph import build_npu_graph
from chakra.text.limits import DEFAULT_MAX_NODES, DEFAULT_MAX_OUTPUT_BYTES, MAX_NODES_PER_NPU
from chakra.text.workload import Workload


@dataclass(frozen=True)
class TextBudget:
    """The most a text conversion may write, all files together (module doc)."""

    max_nodes: int = DEFAULT_MAX_NODES
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES


@dataclass(frozen=True)
class TextEstimate:
    """What each of the files of a text conversion would hold: its nodes (exact) and its
    bytes (an upper bound, within a few per cent)."""

    nodes_per_file: int
    bytes_per_file: int


def _framed_bytes(messages: Sequence[Node]) -> int:
    """The bytes of ``messages`` in an ``.et`` file, each after its length prefix."""
    total = 0
    for message in messages:
        size = message.ByteSize()
        total += size + len(encode_varint(size))
    return total


def _moved(nodes: Sequence[Node], offset: int) -> list[Node]:
    """Copies of ``nodes`` with their ids and dependencies ``offset`` higher."""
    moved = []
    for node in nodes:
        copy = Node()
        copy.CopyFrom(node)
        copy.id += offset
        deps = [dep + offset for dep in copy.data_deps]
        del copy.data_deps[:]
        copy.data_deps.extend(deps)
        moved.append(copy)
    return moved


def estimate_text_output(
    workload: Workload, metadata: GlobalMetadata, num_passes: int
) -> TextEstimate:
    """Nodes and bytes of one file of ``num_passes`` passes of ``workload`` (module doc), from
    at most two passes built; a file over :data:`MAX_NODES_PER_NPU` nodes raises at once."""
    nodes = build_npu_graph(workload, min(num_passes, 2))
    per_pass = len(nodes) // min(num_passes, 2)
    if per_pass * num_passes > MAX_NODES_PER_NPU:
        raise ChakraError(
            f"{num_passes:,} passes of {per_pass:,} nodes would make "
            f"{per_pass * num_passes:,} nodes per NPU, more than the "
            f"{MAX_NODES_PER_NPU:,} a file may hold; ask for fewer passes"
        )
    first, second = nodes[:per_pass], nodes[per_pass:]
    size = _framed_bytes([metadata]) + _framed_bytes(first)
    if second:
        last = _moved(second, (num_passes - 2) * per_pass)
        size += (num_passes - 1) * _framed_bytes(last)
    return TextEstimate(per_pass * num_passes, size)


def check_text_budget(
    estimate: TextEstimate,
    num_npus: int,
    budget: TextBudget,
    prefix: PathLike,
    source: PathLike,
) -> None:
    """Raise a one-line error naming the workload ``source`` and the option that raises the
    limit, when ``num_npus`` files of ``estimate`` exceed the ``budget`` or the space free
    where ``prefix`` writes."""
    nodes = estimate.nodes_per_file * num_npus
    size = estimate.bytes_per_file * num_npus
    what = f"{source}: {num_npus:,} files of {estimate.nodes_per_file:,} nodes"
    if nodes > budget.max_nodes:
        raise ChakraError(
            f"{what} would be {nodes:,} nodes, over the budget of {budget.max_nodes:,} "
            "(--max-nodes raises it); nothing written"
        )
    if size > budget.max_output_bytes:
        raise ChakraError(
            f"{what} would take about {_shown(size)}, over the budget of "
            f"{_shown(budget.max_output_bytes)} (--max-output-bytes raises it); nothing written"
        )
    folder = Path(prefix).parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return  # a missing folder is reported when the files are written
    if size > free:
        raise FileAccessError(
            f"{what} would take about {_shown(size)}, but {folder} has only {_shown(free)} "
            "free; nothing written"
        )


def _shown(size: int) -> str:
    """A byte count for people: ``512 bytes``, ``3.5 MiB``, ``16.0 GiB``, ``2.0 TiB``."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1024)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size:,} bytes"
