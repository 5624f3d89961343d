"""``convert_text``: an ASTRA-sim text workload file -> one Chakra ET file per NPU."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from chakra.errors import ChakraError, FileAccessError, PathLike
from chakra.et import GlobalMetadata, set_attr, write_et
from chakra.fileio import AtomicGroup
from chakra.fileio.regular import open_regular_text
from chakra.text.budget import (
    MAX_NODES_PER_NPU,
    TextBudget,
    TextEstimate,
    check_text_budget,
    estimate_text_output,
)
from chakra.text.graph import build_npu_graph
from chakra.text.workload import TextWorkloadError, Workload, parse_workload

logger = logging.getLogger(__name__)

#: The ``schema`` attribute the reference text converter writes (1.0 interface).
SCHEMA = "1.0.2-chakra.1.0.0"


def read_workload_text(path: PathLike) -> str:
    """The text of ``path`` (UTF-8, newlines normalised as a text-mode read does)."""
    try:
        with open_regular_text(path) as source:
            return source.read()
    except UnicodeDecodeError as exc:
        raise TextWorkloadError(path, None, f"not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise FileAccessError(f"cannot read {path}: {exc.strerror or exc}") from exc


def workload_metadata(text: str) -> GlobalMetadata:
    """The GlobalMetadata the reference writes: ``schema`` and the whole ``input_file``."""
    metadata = GlobalMetadata()
    set_attr(metadata, "schema", SCHEMA)
    set_attr(metadata, "input_file", text)
    return metadata


def output_paths(prefix: PathLike, num_npus: int) -> list[Path]:
    """``<prefix>.<npu>.et`` for every NPU, as the reference names them."""
    return [Path(f"{prefix}.{npu}.et") for npu in range(num_npus)]


@dataclass(frozen=True)
class TextPlan:
    """A parsed workload whose conversion has passed its budget (:func:`plan_text`)."""

    workload: Workload
    metadata: GlobalMetadata
    num_npus: int
    num_passes: int
    estimate: TextEstimate


def plan_text(
    input_path: PathLike,
    prefix: PathLike,
    num_npus: int,
    num_passes: int,
    budget: Optional[TextBudget] = None,
) -> TextPlan:
    """Read and parse ``input_path`` and check that ``num_npus`` files of ``num_passes``
    passes fit a file's cap, the ``budget`` (default :class:`TextBudget`) and the space free
    where ``prefix`` writes (:mod:`chakra.text.budget`): before any graph is built."""
    if num_npus < 1:
        raise ChakraError(f"num_npus must be at least 1, got {num_npus}")
    text = read_workload_text(input_path)
    workload = parse_workload(text, input_path)
    metadata = workload_metadata(text)
    estimate = estimate_text_output(workload, metadata, num_passes)
    check_text_budget(estimate, num_npus, budget or TextBudget(), prefix, input_path)
    return TextPlan(workload, metadata, num_npus, num_passes, estimate)


def write_text(plan: TextPlan, prefix: PathLike) -> list[Path]:
    """Build the graph of ``plan`` and write ``<prefix>.<npu>.et`` for npu in
    ``0..num_npus-1``, together or not at all; return the paths written."""
    workload, num_passes, num_npus = plan.workload, plan.num_passes, plan.num_npus
    nodes = build_npu_graph(workload, num_passes, MAX_NODES_PER_NPU)
    count = len(nodes)
    blobs = [node.SerializeToString() for node in nodes]  # once, for every file
    del nodes
    paths = output_paths(prefix, num_npus)
    with AtomicGroup() as group:
        for path in paths:
            write_et(path, plan.metadata, blobs, group)
    logger.info(
        "%s workload, %d layers, %d passes: %d nodes per NPU written to %s.{0..%d}.et",
        workload.parallelism.value,
        len(workload.layers),
        num_passes,
        count,
        prefix,
        num_npus - 1,
    )
    return paths


def convert_text(
    input_path: PathLike,
    prefix: PathLike,
    num_npus: int,
    num_passes: int,
    budget: Optional[TextBudget] = None,
) -> list[Path]:
    """Convert the text workload ``input_path`` and write ``<prefix>.<npu>.et`` for npu in
    ``0..num_npus-1``; return the paths written (:func:`plan_text`, then
    :func:`write_text`).

    Every NPU runs the same program, so the files are identical (ids restart at 0 in each,
    unlike the reference, whose files differ only by an id offset). The files appear
    together or not at all (:class:`~chakra.fileio.AtomicGroup`): nothing is written when the
    workload does not parse, a file would hold more than :data:`MAX_NODES_PER_NPU` nodes,
    the files together would exceed the ``budget`` or the space free, or a file cannot be
    written.
    """
    return write_text(plan_text(input_path, prefix, num_npus, num_passes, budget), prefix)
