"""The job-level sections that lead ``report.html``: the job (its makespan, the slowest
rank's, measured and simulated; the spread between the ranks; each what-if scenario's
change of the job's makespan, as a table and a chart in %) and the rank comparison (one
stacked column per rank: compute, exposed communication, unexplained and idle time, the
slowest marked; a table of every rank, collapsed above :data:`ALL_RANKS_UP_TO` ranks
behind one of the slowest, median and fastest). Their numbers are ``report.json``'s
``job`` entry (:class:`chakra.views.job.JobSummary`) and ``ranks``; the page stays the same
height however many ranks the job has, but for the one-line summaries of collapsed
sections."""

from __future__ import annotations

from html import escape

from chakra.views.html_numbers import RATIO, SIGNED, US, At, table, text_cell
from chakra.views.job import ALL_RANKS_UP_TO
from chakra.views.svg_charts import PALETTE, Column, Part, change_bars, stacked_columns

#: The parts of a rank's time, as ``report.json``'s ``job.ranks`` names them, and colours.
SHARES = (("compute", PALETTE[2]), ("communication", PALETTE[1]),
          ("unexplained", "#8c8c8c"), ("idle", "#d9d9d9"))  # fmt: skip
SHARE_LABELS = {"compute": "compute", "communication": "exposed comm",
                "unexplained": "unexplained", "idle": "idle"}  # fmt: skip
RANK_HEADERS = ["rank", "simulated µs", "measured µs", "replay err", "compute µs",
                "exposed comm µs", "unexplained µs", "idle µs", "host ops linked",
                "GPU ops linked", "nodes"]  # fmt: skip


def job_section(doc: At) -> str:
    """The job's makespan, spread and what-if results (``<section id="summary">``)."""
    job = doc["job"]
    head = '<section id="summary"><h2>Job</h2>'
    if job.value is None:
        return (
            head
            + '<p class="note">This report has no job summary.</p>'
            + _what_if(doc)
            + "</section>"
        )
    slowest, fastest, median = (job[k].value for k in ("slowest_rank", "fastest_rank",
                                                       "median_rank"))  # fmt: skip
    rows = [
        [text_cell(f"makespan, simulated (the slowest rank: {slowest})"),
         job["simulated_makespan_us"].cell(US)],
        [text_cell(f"makespan, measured (the slowest rank: {job['measured_slowest_rank'].value})"),
         job["measured_makespan_us"].cell(US)],
    ]  # fmt: skip
    if (job["rank_count"].value or 0) > 1:
        rows += [
            [text_cell(f"spread µs: slowest ({slowest}) - fastest ({fastest})"),
             job["spread_us"].cell(US)],
            [text_cell(f"slowest in % of the median rank ({median})"),
             job["spread_ratio"].cell(RATIO)],
        ]  # fmt: skip
    facts = table(["", "value"], rows)
    note = (
        '<p class="note">The job takes as long as its slowest rank: its makespan is that '
        "rank's, first start to last end. Times are the replay's (simulated) unless "
        "said measured.</p>"
    )
    return head + note + _host_source(doc) + facts + _what_if(doc) + "</section>"


def _host_source(doc: At) -> str:
    """A note when some ranks' host side was made from the Kineto trace (no host ET)."""
    links = [entry["link"].value or {} for entry in doc["ranks"].items()]
    made = [link for link in links if link.get("host_source", "host_et") != "host_et"]
    if not made:
        return ""
    lost = "; ".join(made[0].get("host_source_notes") or [])
    return (
        f'<p class="note"><b>Host side made from the Kineto trace</b> on {len(made)} of '
        f"{len(links)} ranks (no host execution trace): {escape(lost)}.</p>"
    )


def _what_if(doc: At) -> str:
    scenarios, changes = doc["what_if"].items(), doc["job"]["what_if"]
    head = '<h3 id="what-if">What-if: the job</h3>'
    if not scenarios:
        return head + '<p class="note">No what-if scenarios were run.</p>'
    rows, bars = [], []
    for k, scenario in enumerate(scenarios):
        change = changes[k]
        meaning = escape(scenario["description"].value or "")
        name = escape(scenario["name"].value)
        matched = scenario["nodes_matched"].value or []
        rules = [f"{rule} ({matched[i]:,} nodes)" if i < len(matched) else rule
                 for i, rule in enumerate(scenario["rules"].value or [])]  # fmt: skip
        cells = [f'<td><b>{name}</b><div class="note">{meaning}</div></td>',
                 text_cell(", ".join(rules))]  # fmt: skip
        if change["makespan_us"].value is None:
            note = scenario["note"].value or change["note"].value or "not run"
            rows.append([*cells, f'<td colspan="3">{escape(note)}</td>'])
            continue
        rows.append(
            [
                *cells,
                change["change_pct"].cell(SIGNED),
                change["makespan_us"].cell(US),
                text_cell(change["slowest_rank"].value),
            ]
        )
        if change["change_pct"].value is not None:
            color = PALETTE[(3 + k) % len(PALETTE)]
            bars.append(Part(scenario["name"].value, change["change_pct"].value, color))
    notes = [f"<li>{escape(s['name'].value)}: {escape(s['note'].value)}</li>"
             for s in scenarios if s["note"].value]  # fmt: skip
    headers = ["scenario", "rules", "job change", "job makespan µs", "slowest rank"]
    chart = change_bars("the job's makespan under each scenario, change in %", bars)
    return (
        head + '<p class="note">The replay again with durations scaled (rules as '
        "<code>chakra_sim --scale</code> takes them). Job change: the job's makespan (its "
        "slowest rank's) in % of the replay's; each rank's own result is in its section "
        f"below.</p>{table(headers, rows)}"
        + (f'<ul class="note">{"".join(notes)}</ul>' if notes else "")
        + (f"<figure>{chart}</figure>" if bars else "")
    )


def rank_comparison(doc: At) -> str:
    """Every rank side by side (``<section id="ranks">``): a stacked column chart of where
    its time went and a table of every rank; above :data:`ALL_RANKS_UP_TO` ranks that
    table is collapsed (a ``<details>``) and one of the slowest, median and fastest ranks
    stands before it."""
    job, ranks = doc["job"], doc["ranks"].items()
    marks = {}
    if job.value is not None:
        marks = {job["fastest_rank"].value: "fastest", job["median_rank"].value: "median",
                 job["slowest_rank"].value: "slowest"}  # fmt: skip
    shares = job["ranks"].items()
    parts = ['<section id="ranks"><h2>Ranks compared</h2>']
    if shares:
        parts.append(f"<figure>{_rank_chart(shares, job['slowest_rank'].value)}</figure>")
    parts.append(
        '<p class="note">Each rank\'s simulated makespan cut in four, by the first that '
        "applies at each instant: compute (a compute kernel runs; on a CPU-only rank, a "
        "host op), exposed communication (communication runs, no compute), unexplained (a "
        "[delay] or [idle] node runs: measured time the graph does not explain), idle "
        "(nothing runs).</p>"
    )
    picked = [(entry, shares[k] if k < len(shares) else At(None)) for k, entry in
              enumerate(ranks) if entry["rank"].value in marks]  # fmt: skip
    if len(ranks) > ALL_RANKS_UP_TO and picked:  # else every rank is open below
        rows = [_rank_row(e, s, marks) for e, s in picked]
        parts.append(table(RANK_HEADERS, rows, caption="the slowest, median and fastest ranks"))
    every = [_rank_row(e, shares[k] if k < len(shares) else At(None), marks)
             for k, e in enumerate(ranks)]  # fmt: skip
    opened = " open" if len(ranks) <= ALL_RANKS_UP_TO else ""
    parts.append(
        f"<details{opened}><summary>every rank ({len(ranks)})</summary>"
        f"{table(RANK_HEADERS, every)}</details></section>"
    )
    return "".join(parts)


def _rank_chart(shares: list[At], slowest: int) -> str:
    columns = [
        Column(
            str(share["rank"].value),
            [
                Part(SHARE_LABELS[name], share[f"{name}_us"].value or 0.0, color)
                for name, color in SHARES
            ],
            "slowest" if share["rank"].value == slowest else "",
        )
        for share in shares
    ]
    return stacked_columns("where each rank's time went (simulated), by rank", columns, "µs")


def _rank_row(entry: At, share: At, marks: dict[int, str]) -> list[str]:
    link, sim, rank = entry["link"].value or {}, entry["simulation"], entry["rank"].value
    matched = sum((link.get("matched") or {}).values())
    gpu_total = link.get("gpu_ops_total", 0) - link.get("gpu_ops_outside_window", 0)
    nodes = sum((entry["convert"].value or {}).get("nodes_by_type", {}).values())
    mark = f' <span class="note">{marks[rank]}</span>' if rank in marks else ""
    return [
        f'<td><a href="#rank-{rank}">{escape(str(rank))}</a>{mark}</td>',
        sim["simulated_makespan_us"].cell(US),
        sim["measured_makespan_us"].cell(US),
        sim["error_pct"].cell(SIGNED),
        *(share[f"{name}_us"].cell(US) for name, _ in SHARES),
        text_cell(f"{matched:,}/{link.get('host_ops', 0):,}"),
        text_cell(f"{link.get('gpu_ops_linked', 0):,}/{gpu_total:,}"),
        f'<td class="n">{nodes:,}</td>',
    ]
