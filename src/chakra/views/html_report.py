"""``report.html``: the pipeline's ``report.json`` as one self-contained page.

One file with inline CSS and inline SVG charts: no scripts, no style sheets, fonts or images
to fetch, no link outside the page, so it opens anywhere, offline. Sections: the job (its
makespan, spread and each what-if scenario's change of it) and the ranks compared
(:mod:`chakra.views.html_job`), the cross-rank agreement and how to read the errors, then
per rank, collapsed but for the slowest (:mod:`chakra.views.html_rank`), its makespans,
what-if results, busy fraction over time (simulated and measured), temporal breakdown,
overlap, top kernels, stream idle time by cause, typed critical path and resource use.
The page's height grows with the number of ranks only by the row of the rank sections'
one-line summaries (a collapsed rank table holds a row per rank). Every number is
``report.json``'s, formatted by the one rule of :mod:`chakra.views.html_numbers`, in a
cell that names its JSON pointer.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any, Optional

from chakra.fileio import AtomicGroup, atomic_output
from chakra.fileio.location import Location
from chakra.views.busy import BusySeries
from chakra.views.html_job import job_section, rank_comparison
from chakra.views.html_numbers import EXAMPLES, At, format_value, table, text_cell
from chakra.views.html_rank import rank_section
from chakra.views.job import ALL_RANKS_UP_TO

#: Above ALL_RANKS_UP_TO ranks, each rank's section lists this many top kernels,
#: critical-path segments and names (report.json holds more), to bound the page's size.
LIMITED_ROWS = 5
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
th{background:#f4f4f4;font-weight:600}td.n,td[data-unit]{text-align:right;font-variant-numeric:tabular-nums;
white-space:nowrap}td{max-width:520px;overflow-wrap:anywhere}
.note{color:#555;font-size:13px}.verdict{font-weight:600}figure{margin:6px 0}
code{background:#f4f4f4;padding:0 3px}summary{cursor:pointer;font-weight:600}
.ranks{display:flex;flex-wrap:wrap;gap:4px 6px}.ranks>details{flex:0 0 auto;font-size:12px;
border:1px solid #ddd;border-radius:4px;padding:1px 6px}.ranks>details[open]{flex:1 1 100%;
font-size:14px}.pair{display:flex;flex-wrap:wrap;gap:0 28px;align-items:flex-start}
"""


def render_report_html(
    report: Mapping[str, Any], busy: Optional[BusySeries] = None, title: str = ""
) -> str:
    """The page of ``report`` (a ``report.json`` document: ``ranks``, ``agreement``,
    ``job`` and, when what-if scenarios ran, ``what_if``); ``busy`` adds the busy-fraction
    charts of its ranks (matched by rank number); ``title`` names the job (escaped). Only
    the slowest rank's section is open (the first rank's without a ``job`` entry); above
    ``ALL_RANKS_UP_TO`` ranks the others list only :data:`LIMITED_ROWS` rows."""
    doc = At(report)
    ranks = doc["ranks"].items()
    by_rank = {r.rank: r for r in busy.ranks} if busy is not None else {}
    span = busy.span_us if busy is not None else 0.0
    slowest = doc["job"]["slowest_rank"].value
    if slowest is None and ranks:
        slowest = ranks[0]["rank"].value
    links = ['<a href="#summary">job</a>', '<a href="#what-if">what-if</a>',
             '<a href="#ranks">ranks compared</a>', '<a href="#agreement">agreement</a>',
             '<a href="#rank-details">each rank</a>',
             '<a href="#numbers">how numbers are shown</a>']  # fmt: skip
    heading = escape(title or "Chakra pipeline report")
    limited = None if len(ranks) <= ALL_RANKS_UP_TO else LIMITED_ROWS
    charted = _charted_ranks(doc, len(ranks))
    sections = []
    for r in ranks:
        opened = r["rank"].value == slowest
        drawn = charted is None or r["rank"].value in charted
        busy_of = by_rank.get(r["rank"].value) if drawn else None
        rows = None if opened else limited
        sections.append(rank_section(r, busy_of, span, doc["what_if"], opened, rows))
    body = [f"<h1>{heading}</h1><p class=\"note\">{len(ranks)} ranks: linked, converted and "
            "simulated together (collectives meet across ranks).</p>",
            f"<nav>{''.join(links)}</nav>", job_section(doc), rank_comparison(doc),
            _agreement(doc),
            '<section id="rank-details"><h2>Each rank</h2><p class="note">One section per '
            f"rank, the slowest open; open another by its name.{_charts_note(charted)}</p>"
            f'<div class="ranks">{"".join(sections)}</div></section>', _numbers_note()]  # fmt: skip
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


def _charted_ranks(doc: At, rank_count: int) -> Optional[frozenset]:
    """The ranks whose sections draw busy charts: every rank up to ``ALL_RANKS_UP_TO``
    (None), else the slowest, median and fastest, as ``utilisation.png`` (two charts of
    about 7 KB each in every section made a 64-rank page over 2 MB)."""
    if rank_count <= ALL_RANKS_UP_TO:
        return None
    job = doc["job"]
    return frozenset(job[k].value for k in ("slowest_rank", "median_rank", "fastest_rank"))


def _charts_note(charted: Optional[frozenset]) -> str:
    if charted is None:
        return ""
    shown = ", ".join(str(rank) for rank in sorted(charted))
    return (f" Busy charts are drawn for the slowest, median and fastest ranks ({shown}), as "
            "in utilisation.png.")  # fmt: skip


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
    compared = len(agreement.get("groups_compared") or [])
    said = f"{compared} process groups compared, {len(problems)} disagreements"
    return (
        '<section id="agreement"><h2>Agreement</h2>'
        f"<details{' open' if problems else ''}><summary>across ranks: {escape(said)}"
        '</summary><h3>Across ranks</h3><p class="note">The i-th collective of a process '
        "group is one operation on "
        f"every rank: what the cross-rank step compared, filled in and found.</p><ul>{facts}"
        f"</ul>{table(['filled in', 'count'], counts) if counts else ''}"
        f"{'<ul>' + listing + '</ul>' if listing else ''}</details>"
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
        f"<li><code>{escape(unit)}</code>: {escape(meaning)}, e.g. "
        f"{escape(format_value(value, unit))}</li>"
        for unit, (meaning, value) in EXAMPLES.items()
    )
    return (
        '<section id="numbers"><h2>How numbers are shown</h2><details><summary>Every '
        'number comes from report.json, formatted by its unit</summary><p class="note">'
        "'-' where a value is unknown; each cell names the value as a JSON pointer in its "
        "<code>data-json</code> attribute and its unit in <code>data-unit</code>:</p>"
        f'<ul class="note">{rules}</ul></details></section>'
    )
