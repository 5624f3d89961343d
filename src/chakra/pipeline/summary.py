"""The terminal summary of a pipeline run: the job first (its makespan, the slowest rank's,
what bounds that rank, and each what-if scenario's change of it, one line each), then the
ranks: every rank up to :data:`ALL_RANKS_UP_TO` ranks, else the slowest, median and fastest
(the rest are in ``report.json`` and ``report.html``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from chakra.pipeline.rank_report import RankReport
from chakra.views.job import ALL_RANKS_UP_TO, JobSummary

HEADER = ("rank  host ops linked  GPU ops linked    nodes  model-only  replay err  "
          "unexplained us   simulated us    measured us")  # fmt: skip


def job_lines(job: JobSummary) -> list[str]:
    """The job's makespan (slowest rank, simulated and measured), the spread between the
    ranks, and one line per what-if scenario: the job's change in % (its slowest rank's
    makespan against the replay's), or why the scenario was skipped."""
    measured = ""
    if job.measured_makespan_us is not None:
        rank = job.measured_slowest_rank
        measured = f", measured {job.measured_makespan_us:,.0f} us (slowest rank {rank})"
    ranks = f"{job.rank_count} rank{'s' if job.rank_count != 1 else ''}"
    lines = [f"job: {ranks}, makespan {job.simulated_makespan_us:,.0f} us simulated "
             f"(slowest rank {job.slowest_rank}){measured}"]  # fmt: skip
    if job.rank_count > 1:
        ratio = f", slowest/median {job.spread_ratio:.3f}" if job.spread_ratio is not None else ""
        lines.append(
            f"  spread: {job.spread_us:,.0f} us between the slowest (rank {job.slowest_rank}) "
            f"and the fastest (rank {job.fastest_rank}){ratio}"
        )
    if not job.what_if:
        return lines
    lines.append("what-if, the job's makespan (its slowest rank's) against the replay's:")
    width = max(len(change.name) for change in job.what_if)
    for change in job.what_if:
        if change.makespan_us is None:
            lines.append(f"  {change.name:<{width}}  {change.note or 'not run'}")
            continue
        pct = "-" if change.change_pct is None else f"{change.change_pct:+.2f}%"
        lines.append(
            f"  {change.name:<{width}}  {pct:>8}  {job.simulated_makespan_us:,.0f} -> "
            f"{change.makespan_us:,.0f} us (slowest rank {change.slowest_rank})"
        )
    return lines


def host_source_line(reports: Sequence[RankReport]) -> Optional[str]:
    """Where the ranks' host side came from when some had no host ET (made from the Kineto
    trace: say so, and what that loses); None when every rank had its host ET."""
    made = [r for r in reports if r.link.get("host_source", "host_et") != "host_et"]
    if not made:
        return None
    lost = made[0].link.get("host_source_notes") or []
    window = made[0].link.get("window") or {}
    step = f"; ProfilerStep#{window['step']}" if window.get("step") is not None else ""
    return (
        f"host side made from the Kineto trace on {len(made)} of {len(reports)} ranks "
        f"(no host ET){step}: {'; '.join(lost)}"
    )


def bound_line(reports: Sequence[RankReport], job: Optional[JobSummary]) -> Optional[str]:
    """What bounds the slowest rank, and how much freeing that kind could give at most
    (:mod:`chakra.views.bound`'s headline); None when it was not computed."""
    if job is None:
        return None
    slowest = next((r for r in reports if r.rank == job.slowest_rank), None)
    if slowest is None or slowest.views.bound is None:
        return None
    return f"  slowest rank {slowest.rank}: {slowest.views.bound.headline}"


def shown_ranks(reports: Sequence[RankReport], job: Optional[JobSummary]) -> list[RankReport]:
    """Every rank up to :data:`ALL_RANKS_UP_TO`, else the slowest, median and fastest."""
    if job is None or len(reports) <= ALL_RANKS_UP_TO:
        return list(reports)
    keep = job.featured_ranks()
    return [report for report in reports if report.rank in keep]


def rank_table(reports: Sequence[RankReport], job: Optional[JobSummary] = None) -> str:
    """One line per rank shown (:func:`shown_ranks`): link coverage, nodes, then the
    model-only error (the makespan with ``[delay]``/``[idle]`` time zeroed, vs measured:
    what the graph explains), the replay's error, the unexplained time on its critical
    path, and the simulated and measured makespans. "-" where a value is unknown (no
    measured times). With more ranks than shown, a last line says how many are left out."""
    rows = [HEADER]
    shown = shown_ranks(reports, job)
    marks = {} if job is None else {job.slowest_rank: "slowest", job.fastest_rank: "fastest"}
    if job is not None and len(shown) < len(reports):
        marks.setdefault(job.median_rank, "median")
    for report in shown:
        link, simulation = report.link, report.simulation
        matched = sum(link["matched"].values())
        nodes = sum(report.convert["nodes_by_type"].values())
        gpu_total = link["gpu_ops_total"] - link["gpu_ops_outside_window"]
        model, replay = simulation.model_only_error_pct, simulation.error_pct
        unexplained, measured = simulation.unexplained_us, simulation.measured_makespan_us
        mark = f"  ({marks[report.rank]})" if report.rank in marks and len(reports) > 1 else ""
        rows.append(
            f"{report.rank:>4}  {matched:>7}/{link['host_ops']:<7} "
            f"{link['gpu_ops_linked']:>6}/{gpu_total:<7} {nodes:>8} "
            f"{_cell(model, '{:+10.2f}%')} {_cell(replay, '{:+10.2f}%')} "
            f"{_cell(unexplained, '{:>14,.0f}')} "
            f"{simulation.simulated_makespan_us:>14,.0f} {_cell(measured, '{:>14,.0f}')}{mark}"
        )
    if len(shown) < len(reports):
        rows.append(
            f"  ({len(reports) - len(shown)} more ranks in report.json and report.html: "
            "the slowest, median and fastest are shown)"
        )
    return "\n".join(rows)


def _cell(value: Optional[float], form: str) -> str:
    """``value`` formatted, or "-" right-aligned to the same width."""
    if value is None:
        return f"{'-':>{len(form.format(0.0))}}"
    return form.format(value)
