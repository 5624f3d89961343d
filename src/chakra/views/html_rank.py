"""One rank's section of ``report.html``, a ``<details>`` element (collapsed unless asked
open): its makespans, what-if results, busy fraction over time, temporal breakdown,
overlap, top kernels, GPU stream idle time by cause, typed critical path, the resources
it used and its training steps (``ProfilerStep#N``), each number a cell of
:mod:`chakra.views.html_numbers` pointing at its ``report.json`` value. Long kernel and op
names are shortened (whole in a tooltip); resources never busy are left out."""

from __future__ import annotations

from html import escape
from typing import Optional

from chakra.views.busy import RankBusy
from chakra.views.html_numbers import (
    COUNT,
    ID,
    PCT,
    RATIO,
    SIGNED,
    US,
    At,
    name_cell,
    table,
    text_cell,
)
from chakra.views.svg_charts import PALETTE, STREAM, THREAD, Band, Part, band_panel, stacked_bars

BREAKDOWN_PARTS = (("compute", PALETTE[2]), ("communication", PALETTE[1]), ("idle", "#bbbbbb"))
KIND_LABELS = {"cpu": "CPU-bound (host ops)", "gpu": "GPU-bound (compute kernels)",
               "communication": "communication-bound",
               "launch": "launch-bound (launch latency)",
               "unexplained": "unexplained-bound ([idle]/[delay])"}  # fmt: skip
IDLE_CAUSES = ("cpu_launch_us", "launch_delay_us", "unexplained_us", "other_stream_us",
               "peer_rank_us", "tail_us", "unattributed_us")  # fmt: skip


def rank_section(
    entry: At, busy: Optional[RankBusy], span_us: float, what_if: At, opened: bool = False,
    rows: Optional[int] = None,
) -> str:  # fmt: skip
    """The ``<details id="rank-R">`` of one ``report.json`` rank entry (``what_if``: the
    report's what-if list, whose per-rank results are in the order of its ranks), open
    when ``opened``; its summary line names the rank and its simulated makespan. ``rows``
    limits the top kernels, critical-path segments and names to that many (None: all
    that report.json holds)."""
    rank = entry["rank"].value
    views = entry["views"]
    position = int(entry.path.rsplit("/", 1)[-1])
    makespan = entry["simulation"]["simulated_makespan_us"].value
    shown = f"{makespan:,.0f} µs" if makespan is not None else "-"
    parts = [
        f'<details id="rank-{rank}" class="rank"{" open" if opened else ""}><summary>'
        f'rank {escape(str(rank))} <span class="note">{shown}</span></summary>',
        _side_by_side(_makespans(entry), _what_if(what_if, position)),
    ]
    if busy is not None:
        parts.append(_busy(busy, span_us))
    if views.value is not None:
        parts += [
            _breakdown(views),
            _side_by_side(_overlap(views), _resources(entry["simulation"])),
            _kernels(views, rows),
            _stream_idle(views),
            _critical_path(views, entry["critical_path"], rows),
            _steps(views),
        ]
    else:
        parts.append(_resources(entry["simulation"]))
    return "".join(parts) + "</details>"


def _side_by_side(*blocks: str) -> str:
    """Small blocks next to each other where the page is wide enough."""
    return '<div class="pair">' + "".join(f"<div>{b}</div>" for b in blocks if b) + "</div>"


def _shown(items: list[At], rows: Optional[int], what: str) -> str:
    """A caption saying how many of ``items`` a table limited to ``rows`` shows."""
    if rows is None or len(items) <= rows:
        return ""
    return f"{rows} of the {len(items)} {what} report.json holds"


def _what_if(what_if: At, position: int) -> str:
    rows = [
        [text_cell(s["name"].value), s["ranks"][position]["makespan_us"].cell(US),
         s["ranks"][position]["change_pct"].cell(SIGNED)]
        for s in what_if.items()
        if len(s["ranks"].value or []) > position
    ]  # fmt: skip
    if not rows:
        return ""
    return "<h3>What-if on this rank</h3>" + table(["scenario", "makespan µs", "change"], rows)


def _makespans(entry: At) -> str:
    sim = entry["simulation"]
    rows = [
        [text_cell("replay (simulated)"), sim["simulated_makespan_us"].cell(US),
         sim["error_pct"].cell(SIGNED)],
        [text_cell("measured"), sim["measured_makespan_us"].cell(US), text_cell("")],
        [text_cell("model only ([delay]/[idle] zeroed)"), sim["model_only_makespan_us"].cell(US),
         sim["model_only_error_pct"].cell(SIGNED)],
        [text_cell("unexplained on the critical path"), sim["unexplained_us"].cell(US),
         text_cell("")],
    ]  # fmt: skip
    return "<h3>Makespans</h3>" + table(["", "µs", "error vs measured"], rows)


def _busy(busy: RankBusy, span_us: float) -> str:
    used = [b for b in busy.bands if any(b.simulated) or any(b.measured or [])
            or any(b.simulated_unexplained or [])]  # fmt: skip

    def bands(measured: bool) -> list[Band]:
        return [
            Band(
                b.resource,
                STREAM if b.gpu else THREAD,
                (b.measured if measured else b.simulated) or [],
                b.measured_unexplained if measured else b.simulated_unexplained,
            )
            for b in used
        ]

    charts = [band_panel(f"rank {busy.rank} simulated", bands(False), span_us)]
    if any(b.measured is not None for b in busy.bands):
        charts.append(band_panel(f"rank {busy.rank} measured", bands(True), span_us))
    return (
        '<h3>Busy fraction over time</h3><p class="note">Each host thread (blue) and GPU '
        "stream (orange): the height of its band is the fraction of each time bin it is "
        "busy, with the time the graph does not explain ([idle]/[delay]) grey above it "
        f"(resources never busy left out).</p><figure>{''.join(charts)}</figure>"
    )


def _breakdown(views: At) -> str:
    sources = [b for b in (views["breakdown"], views["measured_breakdown"]) if b.value is not None]
    bars = [
        (
            b["source"].value,
            [Part(name, b[f"{name}_us"].value, color) for name, color in BREAKDOWN_PARTS],
        )
        for b in sources
    ]
    rows = []
    for b in sources:
        row = [text_cell(b["source"].value), b["makespan_us"].cell(US)]
        for name, _ in BREAKDOWN_PARTS:
            row += [b[f"{name}_us"].cell(US), b[f"{name}_pct"].cell(PCT)]
        rows.append(row)
    headers = ["schedule", "makespan µs", "compute µs", "%", "exposed comm µs", "%", "idle µs",
               "%"]  # fmt: skip
    chart = stacked_bars("temporal breakdown (share of the makespan)", bars)
    return (
        f"<h3>Temporal breakdown</h3><figure>{chart}</figure>"
        + table(headers, rows)
        + '<p class="note">compute: a compute kernel runs on some GPU stream; exposed '
        "communication: communication runs and no compute does; idle: neither.</p>"
    )


def _overlap(views: At) -> str:
    sources = [o for o in (views["overlap"], views["measured_overlap"]) if o.value is not None]
    rows = [
        [
            text_cell(o["source"].value),
            o["communication_us"].cell(US),
            o["overlapped_us"].cell(US),
            o["fraction"].cell(RATIO),
        ]
        for o in sources
    ]
    headers = ["schedule", "communication µs", "under compute µs", "hidden"]
    return "<h3>Communication hidden by compute</h3>" + table(headers, rows)


def _kernels(views: At, limit: Optional[int]) -> str:
    listed = views["kernels"].items()
    kernels = listed[:limit]
    if not kernels:
        return '<h3>Top kernels</h3><p class="note">No GPU kernels in this rank.</p>'
    rows = [
        [
            name_cell(k["name"].value),
            k["count"].cell(COUNT),
            k["total_us"].cell(US),
            k["mean_us"].cell(US),
            k["share"].cell(RATIO),
            text_cell("communication" if k["communication"].value else "compute"),
        ]
        for k in kernels
    ]
    headers = ["kernel", "count", "total µs", "mean µs", "share of GPU time", "kind"]
    caption = _shown(listed, limit, "top kernels")
    return "<h3>Top kernels</h3>" + table(headers, rows, caption=caption)


def _stream_idle(views: At) -> str:
    streams = views["stream_idle"].items()
    if not streams:
        return '<h3>GPU stream idle time by cause</h3><p class="note">No GPU streams.</p>'
    rows = [
        [text_cell(s["stream"].value), s["busy_us"].cell(US), s["idle_us"].cell(US)]
        + [s[cause].cell(US) for cause in IDLE_CAUSES]
        for s in streams
    ]
    headers = ["stream", "busy µs", "idle µs", "waiting on CPU", "launch delay",
               "unexplained delay", "other stream", "peer rank", "tail",
               "unattributed"]  # fmt: skip
    return (
        "<h3>GPU stream idle time by cause</h3>"
        + table(headers, rows)
        + '<p class="note">Idle µs is the sum of its causes; busy + idle is the '
        "makespan.</p>"
    )


def _longest(segments: list[At], limit: Optional[int]) -> list[At]:
    """The ``limit`` longest of ``segments`` (all for None), in time order."""
    if limit is None or len(segments) <= limit:
        return segments
    kept = sorted(segments, key=lambda s: (s["start_us"].value or 0) - (s["end_us"].value or 0))
    return sorted(kept[:limit], key=lambda s: s["start_us"].value or 0)


def _critical_path(views: At, top_names: At, limit: Optional[int]) -> str:
    path = views["critical_path"]
    kinds = [(kind, path[f"{kind}_us"]) for kind in KIND_LABELS
             if f"{kind}_us" in (path.value or {})]  # fmt: skip
    bound, longest = max(kinds, key=lambda item: item[1].value or 0.0, default=("cpu", At(0.0)))
    makespan = path["makespan_us"].value or 0.0
    share = 100.0 * (longest.value or 0.0) / makespan if makespan > 0 else 0.0
    verdict = (
        f'<p class="verdict">{escape(KIND_LABELS[bound])}: {share:.1f}% of the '
        "makespan is on this kind of work along the critical path.</p>"
    )
    if views["bound"].value is not None:  # chakra.views.bound: the headline with its slack
        verdict = f'<p class="verdict">{escape(views["bound"]["headline"].value)}</p>'
    totals = [[text_cell(kind), at.cell(US)] for kind, at in kinds]
    totals.append([text_cell("not on the path"), path["unattributed_us"].cell(US)])
    segments = [
        [
            text_cell(s["kind"].value),
            s["start_us"].cell(US),
            s["end_us"].cell(US),
            s["nodes"].cell(COUNT),
            name_cell(s["name"].value),
            s["node_id"].cell(ID),
        ]
        for s in _longest(path["segments"].items(), limit)
    ]
    names = [[name_cell(item[0].value), item[1].cell(US)] for item in top_names.items()[:limit]]
    shown = f"{len(segments)} longest of {views['critical_path_segments'].value} segments"
    return (
        "<h3>Critical path</h3>"
        + verdict
        + _side_by_side(
            table(["kind", "µs"], totals),
            table(["name", "µs on the path"], names, caption="names with the most time"),
        )
        + table(
            ["kind", "start µs", "end µs", "nodes", "longest node", "node id"],
            segments,
            caption=shown,
        )
    )


STEP_KINDS = ("cpu_us", "gpu_us", "communication_us", "launch_us", "unexplained_us")


def _steps(views: At) -> str:
    """One row per ``ProfilerStep#N`` of the rank (nothing when the trace has none): its
    simulated and measured duration, the error, and the time each kind runs in it."""
    steps = views["steps"].items() if views["steps"].value else []
    if not steps:
        return ""
    rows = [
        [step["step"].cell(COUNT), step["simulated_us"].cell(US), step["measured_us"].cell(US),
         step["error_pct"].cell(SIGNED), *(step[kind].cell(US) for kind in STEP_KINDS)]
        for step in steps
    ]  # fmt: skip
    headers = ["step", "simulated µs", "measured µs", "error", "cpu µs", "gpu µs",
               "communication µs", "launch µs", "unexplained µs"]  # fmt: skip
    caption = "the time during which some node of each kind runs inside the step (they overlap)"
    return "<h3>Steps</h3>" + table(headers, rows, caption=caption)


def _resources(simulation: At) -> str:
    used = [r for r in simulation["resources"].items()
            if r["busy_us"].value or r["unexplained_us"].value]  # fmt: skip
    rows = [
        [text_cell(r["resource"].value), r["busy_us"].cell(US), r["utilisation"].cell(RATIO),
         r["unexplained_us"].cell(US)]
        for r in used
    ]  # fmt: skip
    idle = len(simulation["resources"].items()) - len(used)
    caption = f"{idle} resources never busy left out" if idle else ""
    headers = ["resource", "busy µs", "utilisation", "unexplained µs ([idle], not busy)"]
    return "<h3>Resources (simulated)</h3>" + table(headers, rows, caption=caption)
