"""Validate Chakra ET files one by one, then check their collectives agree across ranks.

Each file is streamed once: :func:`chakra.et.graph_checks.validate_nodes` sees every node while
the communication nodes (COMM_COLL, COMM_SEND, COMM_RECV) are recorded. Across files (rank =
position), :func:`chakra.ranks.agree` lines up every process group's nodes: at each position
every rank must show the same kind (collective, or point-to-point for send and recv alike),
``comm_type`` and ``comm_size``, except what a rank could not know (a guessed type, size 0,
no group), which its peers would fill. Every disagreement is reported; groups seen on one
rank only cannot be compared and are listed as such.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from chakra.errors import ChakraError, PathLike
from chakra.et import EtReader
from chakra.et.contradictions import get_contradictions
from chakra.et.graph_checks import ValidationOptions, ValidationReport, validate_nodes
from chakra.fileio.json_document import JsonDocument
from chakra.ranks import Agreement, CommRecord, agree
from chakra.ranks.files import recording
from chakra.ranks.rank_read import load_agreed
from chakra.simulate import SimOptions, simulate


@dataclass(frozen=True)
class FileResult:
    """The outcome for one file: its report, or ``error`` when it could not be read;
    ``comms``: its communication nodes in file order; ``contradictions``: the dependencies
    the measured times contradict, left out of the graph, by kind, as its GlobalMetadata
    records them (None: not recorded; :mod:`chakra.et.contradictions`)."""

    path: str
    report: Optional[ValidationReport]
    error: Optional[str] = None
    comms: tuple[CommRecord, ...] = ()
    contradictions: Optional[Mapping[str, int]] = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.report is not None and self.report.ok


@dataclass(frozen=True)
class Mismatch:
    """One disagreement of one process group across files."""

    pg: str
    message: str


def check_file(path: PathLike, options: ValidationOptions) -> FileResult:
    """Validate one file and record its communication nodes; a file that cannot be read
    gives a result with ``error`` set rather than raising."""
    comms: list[CommRecord] = []
    try:
        with EtReader(path) as reader:
            contradictions = get_contradictions(reader.metadata, path)
            report = validate_nodes(recording(reader, comms), options)
    except ChakraError as exc:  # its message names the file: the result names it once
        return FileResult(str(path), None, str(exc).removeprefix(f"{path}: "))
    return FileResult(str(path), report, None, tuple(comms), contradictions)


def cross_rank(results: Sequence[FileResult]) -> Agreement:
    """The agreement of the files' communication nodes (rank = position). O(nodes)."""
    return agree([result.comms for result in results])


def cross_rank_mismatches(results: Sequence[FileResult]) -> list[Mismatch]:
    """Every disagreement between the files, with the files named."""
    return mismatches_of(cross_rank(results), results)


def mismatches_of(agreement: Agreement, results: Sequence[FileResult]) -> list[Mismatch]:
    names = "; ".join(f"rank {r} = {result.path}" for r, result in enumerate(results))
    return [Mismatch(d.pg_name, f"{d.message()} ({names})") for d in agreement.disagreements]


def meeting_check(paths: Sequence[PathLike]) -> Optional[str]:
    """Whether the files (rank = position) can replay together: every rank reaches each
    collective of its groups in an order the others can follow. Two ranks whose sequences
    agree can still never meet (rank 0's first collective depends on its second, which
    rank 1 only reaches after the first): the replay finds it, as a deadlock naming the
    ranks and nodes. None when they meet; the one-line reason otherwise."""
    try:  # as chakra_sim reads them: with what peers fill (e.g. 1.0.1 sub-groups)
        simulate(load_agreed(paths), SimOptions(explain=False))
    except ChakraError as exc:
        return str(exc)
    return None


def agreement_lines(agreement: Agreement, files: int) -> list[str]:
    """What the cross-rank check compared, assumed and would fill, for several files."""
    if files < 2:
        return []
    lines = [f"cross-rank: {note}" for note in agreement.notes]
    if agreement.compared:
        lines.append(f"cross-rank: process groups compared: {', '.join(agreement.compared)}")
    else:
        lines.append("cross-rank: no process group is used by two files: nothing compared")
    if agreement.not_compared:
        lines.append(
            "cross-rank: used by one file only, not compared: " + ", ".join(agreement.not_compared)
        )
    lines.extend(
        f"cross-rank: peers would fill {n} x {what}" for what, n in sorted(agreement.counts.items())
    )
    return lines


def format_text(
    results: Sequence[FileResult],
    mismatches: Sequence[Mismatch],
    shown: int = 5,
    agreement: Optional[Agreement] = None,
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
        recorded = _contradiction_line(result)
        if report.ok:
            lines.append(f"{result.path}: ok ({report.nodes} nodes)")
            lines.extend(recorded)
            continue
        counts = ", ".join(f"{kind}: {n}" for kind, n in sorted(report.counts().items()))
        lines.append(
            f"{result.path}: {len(report.problems)} problems in {report.nodes} nodes ({counts})"
        )
        lines.extend(recorded)
        lines.extend(f"  {p.kind}: {p.message}" for p in report.problems[:shown])
        if len(report.problems) > shown:
            lines.append(f"  ... and {len(report.problems) - shown} more")
    if agreement is not None:
        lines.extend(agreement_lines(agreement, len(results)))
    lines.extend(f"cross-rank: {m.message}" for m in mismatches)
    return lines


def _contradiction_line(result: FileResult) -> list[str]:
    """The dependencies the file records as left out, contradicting the measured times."""
    if not result.contradictions:
        return []
    shown = ", ".join(f"{kind} {n}" for kind, n in result.contradictions.items())
    return [f"  contradictions (measured times refute them; not in the graph): {shown}"]


def to_json(
    results: Sequence[FileResult],
    mismatches: Sequence[Mismatch],
    agreement: Optional[Agreement] = None,
) -> JsonDocument:
    """Everything found, as one JSON-ready object."""
    files = []
    for result in results:
        entry: dict[str, Any] = {"path": result.path, "ok": result.ok}
        if result.error is not None:
            entry["error"] = result.error
        if result.report is not None:
            entry["nodes"] = result.report.nodes
            entry["contradictions"] = (
                None if result.contradictions is None else dict(result.contradictions)
            )
            entry["counts"] = result.report.counts()
            entry["problems"] = [
                {"kind": p.kind, "node_id": p.node_id, "message": p.message}
                for p in result.report.problems
            ]
        files.append(entry)
    cross = [{"pg": m.pg, "message": m.message} for m in mismatches]
    ok = all(r.ok for r in results) and not mismatches
    out = {"ok": ok, "files": files, "cross_rank": cross}
    if agreement is not None and len(results) > 1:
        out["groups_compared"] = agreement.compared
        out["groups_not_compared"] = agreement.not_compared
        out["peers_would_fill"] = agreement.counts
        out["notes"] = agreement.notes
    return out
