"""The link report: a short table for people, JSON for machines, and coverage checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import msgspec

from chakra.errors import CoverageError, PathLike
from chakra.fileio import AtomicGroup, atomic_output
from chakra.ingest.json_input import dump_finite
from chakra.link.linked_trace import LinkReport, RankResult


def report_fields(report: LinkReport) -> dict[str, Any]:
    """The report's fields as JSON values, its window in words (:meth:`LinkWindow.describe`)."""
    data = msgspec.to_builtins(report)
    data["window"] = report.window.describe() if report.window is not None else None
    return data


def _write_json(path: PathLike, data: object, group: Optional[AtomicGroup]) -> None:
    with atomic_output(path, text=True, group=group) as out:
        dump_finite(data, out, path, indent=2, sort_keys=True)
        out.write("\n")


def write_report(path: PathLike, report: LinkReport, group: Optional[AtomicGroup] = None) -> None:
    """``--report`` of one rank: the report's fields and its coverages (rounded to 6
    places) as indented JSON, keys sorted; with a ``group``, in place when the group
    commits."""
    data = report_fields(report)
    data["host_coverage"] = round(report.host_coverage, 6)
    data["gpu_coverage"] = round(report.gpu_coverage, 6)
    _write_json(path, data, group)


def write_rank_reports(
    path: PathLike, results: Sequence[RankResult], group: Optional[AtomicGroup] = None
) -> None:
    """``--report`` of a batch: each rank's report fields (without coverages) by rank, as
    indented JSON, keys sorted; with a ``group``, in place when the group commits. Every
    result must have a report."""
    by_rank = {str(r.rank): report_fields(r.report) for r in results if r.report is not None}
    _write_json(path, by_rank, group)


def render_table(report: LinkReport, title: str) -> str:
    """A few aligned lines summarising the link."""
    matched = sum(report.matched.values())
    strategies = ", ".join(f"{k} {v}" for k, v in report.matched.items()) or "none"
    in_window = report.gpu_ops_total - report.gpu_ops_outside_window
    orphans = ", ".join(f"{v} {k}" for k, v in report.gpu_ops_orphaned.items()) or "none"
    host = f"{matched}/{report.host_ops} ({report.host_coverage:.1%}): {strategies}"
    source = "host ET"
    if report.host_source != "host_et":
        source = f"made from the {report.host_source} trace (no host ET)"
    rows = [
        ("host side", source),
        ("host ops matched (verified)", host),
        ("Kineto CPU ops", str(report.kineto_cpu_ops)),
        ("GPU ops linked", f"{report.gpu_ops_linked}/{in_window} ({report.gpu_coverage:.1%}), "
         f"{report.gpu_ops_linked_by_external_id} by External id"),
        ("GPU ops orphaned", orphans),
        ("rejected matches", ", ".join(f"{k} {v}" for k, v in report.rejected.items()) or "none"),
        ("contradictions", ", ".join(f"{k} {v}" for k, v in report.contradictions.items())
         or "none"),
        ("pageable copies that did not block", ", ".join(
            f"{k} {v}" for k, v in report.pageable_copies_not_blocking.items()) or "none"),
        ("on other threads", str(report.host_ops_on_other_threads)),
        ("threads not in host ET", str(report.threads_not_in_host_et)),
        ("re-parented (stale host parent)", str(report.host_ops_reparented)),
        ("GPU ops outside window", str(report.gpu_ops_outside_window)),
        ("streams", ", ".join(map(str, report.streams)) or "none"),
        ("edges", ", ".join(f"{k} {v}" for k, v in report.edges.items()) or "none"),
        ("inferred from timing", ", ".join(f"{k} {v}" for k, v in report.inferred.items())
         or "none"),
        ("window", report.window.describe() if report.window else "whole trace"),
    ]  # fmt: skip
    width = max(len(name) for name, _ in rows)
    lines = [title] + [f"  {name:<{width}}  {value}" for name, value in rows]
    lines += [f"  note: {note}" for note in [*report.host_source_notes, *report.notes]]
    return "\n".join(lines)


def missing_parts(report: LinkReport) -> list[str]:
    """What a partial link lacks, in words (empty when complete)."""
    parts = []
    if report.unmatched_host_ops:
        parts.append(f"{report.unmatched_host_ops} of {report.host_ops} host ops have no timing")
    for reason, count in report.gpu_ops_orphaned.items():
        parts.append(f"{count} GPU ops have no host parent ({reason})")
    return parts


def check_coverage(report: LinkReport, min_host: float, min_gpu: float) -> None:
    """``--strict``: coverage at least the thresholds, no rejected match and no evidence
    contradicting the measured times."""
    if report.contradiction_count or report.rejected:
        found = {
            **report.contradictions,
            **{f"rejected {k}": v for k, v in report.rejected.items()},
        }
        shown = ", ".join(f"{kind} {count}" for kind, count in found.items())
        raise CoverageError(f"--strict: the link contradicts the measured times ({shown})")
    if report.host_coverage < min_host or report.gpu_coverage < min_gpu:
        raise CoverageError(
            f"coverage below --strict thresholds: host ops {report.host_coverage:.2%} "
            f"(min {min_host:.2%}), GPU ops {report.gpu_coverage:.2%} (min {min_gpu:.2%})"
        )
