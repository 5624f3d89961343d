"""One rank's section of ``report.html``: its makespans, busy fraction over time, temporal
breakdown, overlap, top kernels, GPU stream idle time by cause and typed critical path, each
number a cell of :mod:`chakra.views.html_numbers` pointing at its ``report.json`` value."""

from __future__ import annotations

from html import escape
from typing import Optional

from chakra.views.busy import RankBusy
from chakra.views.html_numbers import COUNT, PCT, RATIO, SIGNED, US, At, table, text_cell
from chakra.views.svg_charts import PALETTE, STREAM, THREAD, Band, Part, band_panel, stacked_bars

BREAKDOWN_PARTS = (("compute", PALETTE[2]), ("communication", PALETTE[1]), ("idle", "#bbbbbb"))
KIND_LABELS = {"cpu": "CPU-bound (host ops)", "gpu": "GPU-bound (compute kernels)",
               "communication": "communication-bound",
               "launch": "launch-bound (launch latency)",
               "unexplained": "unexplained-bound ([idle]/[delay])"}  # fmt: skip
IDLE_CAUSES = ("cpu_launch_us", "launch_delay_us", "other_stream_us", "peer_rank_us", "tail_us",
               "unattributed_us")  # fmt: skip


def rank_section(entry: At, busy: Optional[RankBusy], span_us: float) -> str:
    """The ``<section id="rank-R">`` of one ``report.json`` rank entry."""
    rank = entry["rank"].value
    views = entry["views"]
    parts = [f'<section id="rank-{rank}"><h2>Rank {escape(str(rank))}</h2>', _makespans(entry)]
    if busy is not None:
        parts.append(_busy(busy, span_us))
    if views.value is not None:
        parts += [
            _breakdown(views),
            _overlap(views),
            _kernels(views),
            _stream_idle(views),
            _critical_path(views, entry["critical_path"]),
        ]
    parts.append(_resources(entry["simulation"]))
    return "".join(parts) + "</section>"


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
    def bands(measured: bool) -> list[Band]:
        return [
            Band(
                b.resource,
                STREAM if b.gpu else THREAD,
                (b.measured if measured else b.simulated) or [],
            )
            for b in busy.bands
        ]

    charts = [band_panel(f"rank {busy.rank} simulated", bands(False), span_us)]
    if any(b.measured is not None for b in busy.bands):
        charts.append(band_panel(f"rank {busy.rank} measured", bands(True), span_us))
    return (
        '<h3>Busy fraction over time</h3><p class="note">Each host thread (blue) and GPU '
        "stream (orange): the height of its band is the fraction of each time bin it is "
        f"busy.</p><figure>{''.join(charts)}</figure>"
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


def _kernels(views: At) -> str:
    kernels = views["kernels"].items()
    if not kernels:
        return '<h3>Top kernels</h3><p class="note">No GPU kernels in this rank.</p>'
    rows = [
        [
            text_cell(k["name"].value),
            k["count"].cell(COUNT),
            k["total_us"].cell(US),
            k["mean_us"].cell(US),
            k["share"].cell(RATIO),
            text_cell("communication" if k["communication"].value else "compute"),
        ]
        for k in kernels
    ]
    headers = ["kernel", "count", "total µs", "mean µs", "share of GPU time", "kind"]
    return "<h3>Top kernels</h3>" + table(headers, rows)


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
               "other stream", "peer rank", "tail", "unattributed"]  # fmt: skip
    return (
        "<h3>GPU stream idle time by cause</h3>"
        + table(headers, rows)
        + '<p class="note">Idle µs is the sum of its causes; busy + idle is the '
        "makespan.</p>"
    )


def _critical_path(views: At, top_names: At) -> str:
    path = views["critical_path"]
    kinds = [(kind, path[f"{kind}_us"]) for kind in KIND_LABELS]
    bound, longest = max(kinds, key=lambda item: item[1].value or 0.0)
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
            text_cell(s["name"].value),
            s["node_id"].cell(COUNT),
        ]
        for s in path["segments"].items()
    ]
    names = [[text_cell(item[0].value), item[1].cell(US)] for item in top_names.items()]
    shown = f"{len(segments)} longest of {views['critical_path_segments'].value} segments"
    return (
        "<h3>Critical path</h3>"
        + verdict
        + table(["kind", "µs"], totals)
        + table(
            ["kind", "start µs", "end µs", "nodes", "longest node", "node id"],
            segments,
            caption=shown,
        )
        + table(["name", "µs on the path"], names, caption="names with the most time")
    )


def _resources(simulation: At) -> str:
    rows = [
        [text_cell(r["resource"].value), r["busy_us"].cell(US), r["utilisation"].cell(RATIO),
         r["unexplained_us"].cell(US)]
        for r in simulation["resources"].items()
    ]  # fmt: skip
    headers = ["resource", "busy µs", "utilisation", "unexplained µs ([idle], not busy)"]
    return "<h3>Resources (simulated)</h3>" + table(headers, rows)
