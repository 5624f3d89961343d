"""Validate Chakra ET files one by one, then check their collectives agree across ranks.

Each file is streamed once: :func:`chakra.et.validate.validate_nodes` sees every node while
the communication nodes (COMM_COLL, COMM_SEND, COMM_RECV) are recorded per ``pg_name``.
Across files, every process group must show the same sequence of operations, each with the
same kind (collective, or point-to-point for send and recv alike), ``comm_type`` and
``comm_size``, on every file that has that group; the first difference per group is
reported. Nodes without ``pg_name`` form one group of their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from chakra.errors import ChakraError, PathLike
from chakra.et import EtReader, NodeType, get_attr
from chakra.et.validate import ValidationOptions, ValidationReport, validate_nodes

_COMM_TYPES = {
    NodeType.COMM_COLL_NODE: "collective",
    NodeType.COMM_SEND_NODE: "p2p",
    NodeType.COMM_RECV_NODE: "p2p",
}
#: How the group of nodes without ``pg_name`` is named in messages.
NO_PG = "(no pg_name)"


class ValidationFailedError(ChakraError):
    """At least one file has problems, or the files disagree across ranks."""


@dataclass(frozen=True)
class CommOp:
    """One communication node as compared across ranks."""

    node_id: int
    name: str
    kind: str
    comm_type: Any
    comm_size: Any

    def signature(self) -> tuple[str, Any, Any]:
        return (self.kind, self.comm_type, self.comm_size)

    def describe(self) -> str:
        return (
            f"node {self.node_id} ({self.name!r}, {self.kind}, comm_type={self.comm_type},"
            f" comm_size={self.comm_size})"
        )


@dataclass(frozen=True)
class FileResult:
    """The outcome for one file: its report, or ``error`` when it could not be read."""

    path: str
    report: Optional[ValidationReport]
    error: Optional[str] = None
    comms: Mapping[str, tuple[CommOp, ...]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and self.report is not None and self.report.ok


@dataclass(frozen=True)
class Mismatch:
    """The first disagreement of one process group between two files."""

    pg: str
    message: str


def _recording(nodes: Iterable[Any], comms: dict[str, list[CommOp]]) -> Iterator[Any]:
    for node in nodes:
        kind = _COMM_TYPES.get(node.type)
        if kind is not None:
            pg = get_attr(node, "pg_name")
            op = CommOp(
                node.id,
                node.name,
                kind,
                get_attr(node, "comm_type"),
                get_attr(node, "comm_size"),
            )
            comms.setdefault(pg if isinstance(pg, str) and pg else NO_PG, []).append(op)
        yield node


def check_file(path: PathLike, options: ValidationOptions) -> FileResult:
    """Validate one file and record its communication nodes; a file that cannot be read
    gives a result with ``error`` set rather than raising."""
    comms: dict[str, list[CommOp]] = {}
    try:
        with EtReader(path) as reader:
            report = validate_nodes(_recording(reader, comms), options)
    except ChakraError as exc:
        return FileResult(str(path), None, str(exc))
    return FileResult(str(path), report, None, {pg: tuple(ops) for pg, ops in comms.items()})


def cross_rank_mismatches(results: Sequence[FileResult]) -> list[Mismatch]:
    """The first difference of each process group between the first file having it and any
    other. O(total communication nodes)."""
    first_seen: dict[str, FileResult] = {}
    mismatches: dict[str, Mismatch] = {}
    for result in results:
        for pg in result.comms:
            reference = first_seen.setdefault(pg, result)
            if reference is result or pg in mismatches:
                continue
            message = _first_difference(reference, result, pg)
            if message is not None:
                mismatches[pg] = Mismatch(pg, message)
    return list(mismatches.values())


def _first_difference(a: FileResult, b: FileResult, pg: str) -> Optional[str]:
    ops_a, ops_b = a.comms[pg], b.comms[pg]
    for index, (op_a, op_b) in enumerate(zip(ops_a, ops_b)):
        if op_a.signature() != op_b.signature():
            return (
                f"pg {pg!r}: operation #{index + 1} is {op_a.describe()} in {a.path}"
                f" but {op_b.describe()} in {b.path}"
            )
    if len(ops_a) != len(ops_b):
        return (
            f"pg {pg!r}: {a.path} has {len(ops_a)} communication nodes, {b.path} has {len(ops_b)}"
        )
    return None


def format_text(
    results: Sequence[FileResult], mismatches: Sequence[Mismatch], shown: int = 5
) -> list[str]:
    """Human-readable lines: per file a verdict, its first ``shown`` problems and counts;
    then the cross-rank mismatches."""
    lines = []
    for result in results:
        if result.error is not None:
            lines.append(f"{result.path}: unreadable: {result.error}")
            continue
        report = result.report
        assert report is not None
        if report.ok:
            lines.append(f"{result.path}: ok ({report.nodes} nodes)")
            continue
        counts = ", ".join(f"{kind}: {n}" for kind, n in sorted(report.counts().items()))
        lines.append(
            f"{result.path}: {len(report.problems)} problems in {report.nodes} nodes ({counts})"
        )
        lines.extend(f"  {p.kind}: {p.message}" for p in report.problems[:shown])
        if len(report.problems) > shown:
            lines.append(f"  ... and {len(report.problems) - shown} more")
    lines.extend(f"cross-rank: {m.message}" for m in mismatches)
    return lines


def to_json(results: Sequence[FileResult], mismatches: Sequence[Mismatch]) -> dict[str, Any]:
    """Everything found, as one JSON-ready object."""
    files = []
    for result in results:
        entry: dict[str, Any] = {"path": result.path, "ok": result.ok}
        if result.error is not None:
            entry["error"] = result.error
        if result.report is not None:
            entry["nodes"] = result.report.nodes
            entry["counts"] = result.report.counts()
            entry["problems"] = [
                {"kind": p.kind, "node_id": p.node_id, "message": p.message}
                for p in result.report.problems
            ]
        files.append(entry)
    cross = [{"pg": m.pg, "message": m.message} for m in mismatches]
    ok = all(r.ok for r in results) and not mismatches
    return {"ok": ok, "files": files, "cross_rank": cross}
