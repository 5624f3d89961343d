"""The tables of ``report.html`` as rows (one mapping per row, column name -> value), read
from a ``report.json`` document (the pipeline's, or one :mod:`chakra.analysis.facade`
builds for bare ``.et`` files). Each function's rows hold the numbers the page's table of
the same name shows, unformatted, one row per rank (and per scenario, segment...) so that
one table covers the job."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Row = dict[str, Any]
Document = Mapping[str, Any]

#: report.html's section and table headings -> the facade methods that return them (a
#: heading with several tables lists one method per table, in page order).
REPORT_TABLES: Mapping[str, tuple[str, ...]] = {
    "Job": ("job",),
    "What-if: the job": ("job_what_if",),
    # above 16 ranks the slowest, median and fastest ranks, then every rank (collapsed)
    "Ranks compared": ("rank_comparison", "rank_comparison"),
    "Across ranks": ("agreement",),
    "Makespans": ("makespans",),
    "What-if on this rank": ("what_if",),
    "Temporal breakdown": ("breakdown",),
    "Communication hidden by compute": ("overlap",),
    "Top kernels": ("kernels",),
    "GPU stream idle time by cause": ("stream_idle",),
    "Critical path": ("critical_path", "critical_path_names", "critical_path_segments"),
    "Resources (simulated)": ("resources",),
    "Steps": ("steps",),
}

_SIMULATION = ("simulated_makespan_us", "measured_makespan_us", "error_pct",
               "model_only_makespan_us", "model_only_error_pct", "unexplained_us",
               "delay_us")  # fmt: skip


def _ranks(document: Document) -> list[Mapping[str, Any]]:
    return sorted(document.get("ranks") or [], key=lambda r: r["rank"])


def summary_rows(document: Document) -> list[Row]:
    """Per rank: link coverage, node count, makespans and errors (the Summary table)."""
    rows = []
    for entry in _ranks(document):
        link, simulation = entry.get("link") or {}, entry["simulation"]
        gpu_total = link.get("gpu_ops_total", 0) - link.get("gpu_ops_outside_window", 0)
        rows.append(
            {
                "rank": entry["rank"],
                "host_ops_linked": sum((link.get("matched") or {}).values()),
                "host_ops": link.get("host_ops", 0),
                "gpu_ops_linked": link.get("gpu_ops_linked", 0),
                "gpu_ops": gpu_total,
                "nodes": simulation["nodes"],
                **{key: simulation.get(key) for key in _SIMULATION},
            }
        )
    return rows


def makespan_rows(document: Document) -> list[Row]:
    """Per rank: the replay's, measured and model-only makespans (the Makespans tables)."""
    return [
        {"rank": entry["rank"], **{key: entry["simulation"].get(key) for key in _SIMULATION}}
        for entry in _ranks(document)
    ]


def what_if_rows(document: Document) -> list[Row]:
    """Per scenario and rank: the what-if makespan and its change; a skipped scenario has
    one row with its note and no rank."""
    rows = []
    for scenario in document.get("what_if") or []:
        head = {
            "scenario": scenario["name"],
            "rules": ", ".join(scenario["rules"]),
            "nodes_matched": list(scenario["nodes_matched"]),
            "note": scenario.get("note"),
        }
        results = scenario.get("ranks") or [{}]
        for result in results:
            rows.append(
                {
                    **head,
                    "rank": result.get("rank"),
                    "makespan_us": result.get("makespan_us"),
                    "replay_makespan_us": result.get("replay_makespan_us"),
                    "change_pct": result.get("change_pct"),
                }
            )
    return rows


def agreement_rows(document: Document) -> list[Row]:
    """What the cross-rank step filled in, by kind, and how often."""
    counts = (document.get("agreement") or {}).get("counts") or {}
    return [{"filled_in": key, "count": value} for key, value in sorted(counts.items())]


def _per_rank(document: Document, pick: str) -> list[Row]:
    """The rows of one list of each rank's views (``pick``), each with its rank first."""
    rows = []
    for entry in _ranks(document):
        for item in (entry.get("views") or {}).get(pick) or []:
            rows.append({"rank": entry["rank"], **item})
    return rows


def _sources(document: Document, simulated: str, measured: str) -> list[Row]:
    rows = []
    for entry in _ranks(document):
        views = entry.get("views") or {}
        rows += [dict(views[key]) for key in (simulated, measured) if views.get(key)]
    return rows


def breakdown_rows(document: Document) -> list[Row]:
    """Per rank and schedule (simulated, measured): compute, exposed communication, idle."""
    return _sources(document, "breakdown", "measured_breakdown")


def overlap_rows(document: Document) -> list[Row]:
    """Per rank and schedule: communication time and the part hidden under compute."""
    rows = []
    for entry in _ranks(document):
        views = entry.get("views") or {}
        for key in ("overlap", "measured_overlap"):
            if views.get(key):
                rows.append({"rank": entry["rank"], **views[key]})
    return rows


def kernel_rows(document: Document) -> list[Row]:
    """Per rank: its top kernels by total GPU time."""
    return _per_rank(document, "kernels")


def step_rows(document: Document) -> list[Row]:
    """Per rank and ``ProfilerStep#N``: simulated and measured duration, time per kind."""
    return _per_rank(document, "steps")


def stream_idle_rows(document: Document) -> list[Row]:
    """Per rank and GPU stream: busy and idle time, idle by cause."""
    return _per_rank(document, "stream_idle")


def critical_path_rows(document: Document) -> list[Row]:
    """Per rank: the critical path's time by kind."""
    rows = []
    for entry in _ranks(document):
        path = (entry.get("views") or {}).get("critical_path")
        if path:
            rows.append({key: value for key, value in path.items() if key != "segments"})
    return rows


def segment_rows(document: Document) -> list[Row]:
    """Per rank: the critical path's longest segments, in time order."""
    rows = []
    for entry in _ranks(document):
        path = (entry.get("views") or {}).get("critical_path") or {}
        rows += [{"rank": entry["rank"], **segment} for segment in path.get("segments") or []]
    return rows


def path_name_rows(document: Document) -> list[Row]:
    """Per rank: the node names with the most time on the critical path."""
    return [
        {"rank": entry["rank"], "name": name, "total_us": total}
        for entry in _ranks(document)
        for name, total in entry.get("critical_path") or []
    ]


def resource_rows(document: Document) -> list[Row]:
    """Per rank and resource (host thread, GPU stream): simulated busy time."""
    return [
        {"rank": entry["rank"], **use}
        for entry in _ranks(document)
        for use in entry["simulation"].get("resources") or []
    ]


def rank_comparison_rows(document: Document) -> list[Row]:
    """Per rank (the straggler view): makespan, compute, exposed communication, idle and
    unexplained time of the replay, how far behind the slowest rank it ends, and whether
    it is the slowest. The four parts are the report's ``job.ranks`` (report.html's "Ranks
    compared": they add up to the makespan) where it has them, else the temporal breakdown
    and the unexplained time on the critical path."""
    shares = {s["rank"]: s for s in (document.get("job") or {}).get("ranks") or []}
    rows = []
    for entry in _ranks(document):
        breakdown = (entry.get("views") or {}).get("breakdown") or {}
        parts = shares.get(entry["rank"]) or {
            **breakdown, "unexplained_us": entry["simulation"].get("unexplained_us")}  # fmt: skip
        rows.append(
            {
                "rank": entry["rank"],
                "makespan_us": entry["simulation"]["simulated_makespan_us"],
                **{
                    key: parts.get(key)
                    for key in ("compute_us", "communication_us", "idle_us", "unexplained_us")
                },
            }
        )
    slowest = max((row["makespan_us"] for row in rows), default=0.0)
    for row in rows:
        row["behind_slowest_us"] = slowest - row["makespan_us"]
        row["slowest"] = row["makespan_us"] == slowest
    return rows


def job_rows(document: Document) -> list[Row]:
    """One row: the job's makespan (its slowest rank's, simulated and measured), the
    fastest and median ranks and the spread (report.html's "Job" table)."""
    job = document.get("job")
    if not job:
        return []
    return [{key: value for key, value in job.items() if key not in ("ranks", "what_if")}]


def job_what_if_rows(document: Document) -> list[Row]:
    """Per what-if scenario: the job's makespan under it (its slowest rank's) and the change
    in % of the replay's; a skipped scenario's note."""
    return [dict(change) for change in (document.get("job") or {}).get("what_if") or []]
