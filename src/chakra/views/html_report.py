"""``report.html``: the pipeline's ``report.json`` as one self-contained page.

One file with inline CSS and inline SVG charts: no scripts, no style sheets, fonts or images
to fetch, no link outside the page, so it opens anywhere, offline. Sections: the per-rank
summary table (the columns of ``chakra_pipeline``'s), the what-if results, the cross-rank
agreement and how to read the errors, then per rank its makespans, busy fraction over time
(simulated and measured), temporal breakdown, overlap, top kernels, stream idle time by
cause, typed critical path and resource use. Every number is ``report.json``'s, formatted by
the one rule of :mod:`chakra.views.html_numbers`, in a cell that names its JSON pointer.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any, Optional

from chakra.fileio import AtomicGroup, atomic_output
from chakra.fileio.location import Location
from chakra.views.busy import BusySeries
from chakra.views.html_numbers import FORMATS, SIGNED, US, At, table, text_cell
from chakra.views.html_rank import rank_section
from chakra.views.svg_charts import PALETTE, Part, grouped_bars

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;
padding:0 16px 40px;color:#222}
h1{font-size:22px;margin:18px 0 4px}h2{font-size:18px;border-bottom:2px solid #ddd;
margin-top:34px;padding-bottom:3px}h3{font-size:15px;margin:20px 0 6px}
nav{position:sticky;top:0;background:#fff;padding:6px 0;border-bottom:1px solid #eee}
nav a{margin-right:12px;color:#2a5db0;text-decoration:none}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
caption{text-align:left;color:#666;font-size:12px;padding:2px 0}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f4f4f4;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums;
white-space:nowrap}td{max-width:520px;overflow-wrap:anywhere}
.note{color:#555;font-size:13px}.verdict{font-weight:600}figure{margin:6px 0}
code{background:#f4f4f4;padding:0 3px}
"""
SUMMARY_HEADERS = ["rank", "host ops linked", "GPU ops linked", "nodes", "model-only err",
                   "replay err", "unexplained µs", "simulated µs", "measured µs"]  # fmt: skip


def render_report_html(
    report: Mapping[str, Any], busy: Optional[BusySeries] = None, title: str = ""
) -> str:
    """The page of ``report`` (a ``report.json`` document: ``ranks``, ``agreement`` and,
    when what-if scenarios ran, ``what_if``); ``busy`` adds the busy-fraction charts of its
    ranks (matched by rank number); ``title`` names the job (escaped)."""
    doc = At(report)
    ranks = doc["ranks"].items()
    by_rank = {r.rank: r for r in busy.ranks} if busy is not None else {}
    span = busy.span_us if busy is not None else 0.0
    links = ['<a href="#summary">summary</a>', '<a href="#what-if">what-if</a>',
             '<a href="#agreement">agreement</a>']  # fmt: skip
    links += [f'<a href="#rank-{r["rank"].value}">rank {r["rank"].value}</a>' for r in ranks]
    links.append('<a href="#numbers">how numbers are shown</a>')
    heading = escape(title or "Chakra pipeline report")
    body = [f"<h1>{heading}</h1><p class=\"note\">{len(ranks)} ranks: linked, converted and "
            "simulated together (collectives meet across ranks).</p>",
            f"<nav>{''.join(links)}</nav>", _summary(ranks), _what_if(doc),
            _agreement(doc)]  # fmt: skip
    body += [rank_section(r, by_rank.get(r["rank"].value), span) for r in ranks]
    body.append(_numbers_note())
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{heading}</title><style>{STYLE}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def write_report_html(
    path: Location, report: Mapping[str, Any], busy: Optional[BusySeries] = None,
    title: str = "", group: Optional[AtomicGroup] = None,
) -> None:  # fmt: skip
    """Write :func:`render_report_html` to ``path`` (a path or URL), whole or not at all;
    with a ``group``, in place when the group commits."""
    page = render_report_html(report, busy, title)
    with atomic_output(path, text=True, group=group) as out:
        out.write(page)


def _summary(ranks: list[At]) -> str:
    rows = []
    for entry in ranks:
        link, sim = entry["link"].value or {}, entry["simulation"]
        matched = sum((link.get("matched") or {}).values())
        gpu_total = link.get("gpu_ops_total", 0) - link.get("gpu_ops_outside_window", 0)
        nodes = sum((entry["convert"].value or {}).get("nodes_by_type", {}).values())
        rank = entry["rank"].value
        rows.append(
            [
                f'<td><a href="#rank-{rank}">{escape(str(rank))}</a></td>',
                text_cell(f"{matched:,}/{link.get('host_ops', 0):,}"),
                text_cell(f"{link.get('gpu_ops_linked', 0):,}/{gpu_total:,}"),
                f'<td class="n">{nodes:,}</td>',
                sim["model_only_error_pct"].cell(SIGNED),
                sim["error_pct"].cell(SIGNED),
                sim["unexplained_us"].cell(US),
                sim["simulated_makespan_us"].cell(US),
                sim["measured_makespan_us"].cell(US),
            ]
        )
    return '<section id="summary"><h2>Summary</h2>' + table(SUMMARY_HEADERS, rows) + "</section>"


def _what_if(doc: At) -> str:
    scenarios = doc["what_if"].items()
    head = '<section id="what-if"><h2>What-if</h2>'
    if not scenarios:
        return head + '<p class="note">No what-if scenarios were run.</p></section>'
    rows = []
    for scenario in scenarios:
        rules = ", ".join(scenario["rules"].value)
        matched = ", ".join(f"{n:,}" for n in scenario["nodes_matched"].value)
        meaning = escape(scenario["description"].value or "")
        name = f'<td><b>{escape(scenario["name"].value)}</b><div class="note">{meaning}</div></td>'
        first = [name, text_cell(rules), text_cell(matched)]
        results = scenario["ranks"].items()
        if not results:
            rows.append([*first, f'<td colspan="4">{escape(scenario["note"].value or "")}</td>'])
            continue
        span = f' rowspan="{len(results)}"'
        first = [cell.replace("<td>", f"<td{span}>", 1) for cell in first]
        for k, result in enumerate(results):
            cells = [text_cell(result["rank"].value), result["makespan_us"].cell(US),
                     result["replay_makespan_us"].cell(US),
                     result["change_pct"].cell(SIGNED)]  # fmt: skip
            rows.append((first if k == 0 else []) + cells)
    headers = ["scenario", "rules", "nodes matched", "rank", "makespan µs", "replay µs",
               "change"]  # fmt: skip
    notes = [
        f"<li>{escape(s['name'].value)}: {escape(s['note'].value)}</li>"
        for s in scenarios
        if s["note"].value
    ]
    listed = f'<ul class="note">{"".join(notes)}</ul>' if notes else ""
    return (
        head + '<p class="note">The replay again with durations scaled (rules as '
        "<code>chakra_sim --scale</code> takes them); change in % of the replay's "
        f"makespan.</p>{table(headers, rows)}{listed}"
        f"<figure>{_makespan_chart(doc)}</figure></section>"
    )


def _makespan_chart(doc: At) -> str:
    scenarios = [s for s in doc["what_if"].value or [] if s["ranks"]]
    groups = []
    for position, entry in enumerate(doc["ranks"].value):
        sim = entry.get("simulation") or {}
        values = [("measured", sim.get("measured_makespan_us"), "#555555"),
                  ("replay", sim.get("simulated_makespan_us"), PALETTE[0]),
                  ("model-only", sim.get("model_only_makespan_us"), "#999999")]  # fmt: skip
        values += [
            (s["name"], s["ranks"][position]["makespan_us"], PALETTE[(3 + k) % len(PALETTE)])
            for k, s in enumerate(scenarios)
        ]
        parts = [Part(name, value, color) for name, value, color in values if value is not None]
        groups.append((f"rank {entry['rank']}", parts))
    return grouped_bars("makespan per rank: measured, replay, model-only and what-if", groups, "µs")


def _agreement(doc: At) -> str:
    agreement = doc["agreement"].value or {}
    counts = [
        [text_cell(key), f'<td class="n">{value:,}</td>']
        for key, value in sorted((agreement.get("counts") or {}).items())
    ]
    items = [("groups compared", agreement.get("groups_compared")),
             ("groups not compared", agreement.get("groups_not_compared")),
             ("ranks whose .et was rewritten", agreement.get("ranks_rewritten"))]  # fmt: skip
    facts = "".join(
        f"<li>{escape(name)}: {escape(', '.join(map(str, v)) or 'none')}</li>"
        for name, v in items
        if v is not None
    )
    notes = agreement.get("notes") or []
    problems = agreement.get("disagreements") or []
    listing = "".join(f"<li>{escape(str(n))}</li>" for n in [*problems, *notes])
    return (
        '<section id="agreement"><h2>Agreement</h2><h3>Across ranks</h3>'
        '<p class="note">The i-th collective of a process group is one operation on '
        f"every rank: what the cross-rank step compared, filled in and found.</p><ul>{facts}"
        f"</ul>{table(['filled in', 'count'], counts) if counts else ''}"
        f"{'<ul>' + listing + '</ul>' if listing else ''}"
        '<h3>Simulated against measured</h3><ul class="note">'
        "<li><b>replay err</b>: the simulated makespan against the measured one; near 0 "
        "means the graph replays its measured times.</li><li><b>model-only err</b>: the "
        "makespan with every [delay] and [idle] node taking no time, against the measured "
        "one: how much the graph's own ops and dependencies explain.</li>"
        "<li><b>unexplained µs</b>: [delay] and [idle] time on the replay's critical "
        "path, measured time the graph does not explain.</li></ul></section>"
    )


def _numbers_note() -> str:
    rules = "".join(
        f"<li><code>{escape(unit)}</code>: <code>{escape(form)}</code></li>"
        for unit, form in FORMATS.items()
    )
    return (
        '<section id="numbers"><h2>How numbers are shown</h2><p class="note">Every number '
        "comes from report.json, formatted by its unit (µs rounded to whole µs; "
        "'-' where a value is unknown); each cell names the value as a JSON pointer in "
        f"its <code>data-json</code> attribute and its unit in <code>data-unit</code>:</p>"
        f'<ul class="note">{rules}</ul></section>'
    )
