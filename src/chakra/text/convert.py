"""``convert_text``: an ASTRA-sim text workload file -> one Chakra ET file per NPU."""

from __future__ import annotations

import logging
from pathlib import Path

from chakra.errors import ChakraError, FileAccessError, PathLike
from chakra.et import GlobalMetadata, set_attr, write_et
from chakra.fileio import AtomicGroup
from chakra.fileio.regular import open_regular_text
from chakra.text.graph import build_npu_graph
from chakra.text.workload import TextWorkloadError, parse_workload

logger = logging.getLogger(__name__)

#: The ``schema`` attribute the reference text converter writes (1.0 interface).
SCHEMA = "1.0.2-chakra.1.0.0"

#: The most nodes a file of one NPU may hold. The graph is built in memory as protobuf
#: messages (about 1.6 KB each, so ~1.6 GB and ~6 s here at the cap); far more exhausts the
#: memory, and protobuf's C allocator then crashes the process (SIGSEGV) instead of raising
#: MemoryError: ``--num-passes 100000000`` did.
MAX_NODES_PER_NPU = 1_000_000


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


def convert_text(
    input_path: PathLike, prefix: PathLike, num_npus: int, num_passes: int
) -> list[Path]:
    """Convert the text workload ``input_path`` and write ``<prefix>.<npu>.et`` for npu in
    ``0..num_npus-1``; return the paths written.

    Every NPU runs the same program, so the files are identical (ids restart at 0 in each,
    unlike the reference, whose files differ only by an id offset). The files appear
    together or not at all (:class:`~chakra.fileio.AtomicGroup`): nothing is written when the
    workload does not parse, holds more than :data:`MAX_NODES_PER_NPU` nodes, or a file
    cannot be written.
    """
    if num_npus < 1:
        raise ChakraError(f"num_npus must be at least 1, got {num_npus}")
    text = read_workload_text(input_path)
    workload = parse_workload(text, input_path)
    nodes = build_npu_graph(workload, num_passes, MAX_NODES_PER_NPU)
    count = len(nodes)
    blobs = [node.SerializeToString() for node in nodes]  # once, for every file
    del nodes
    metadata = workload_metadata(text)
    paths = output_paths(prefix, num_npus)
    with AtomicGroup() as group:
        for path in paths:
            write_et(path, metadata, blobs, group)
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
