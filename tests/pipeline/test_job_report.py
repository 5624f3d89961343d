"""A 64-rank synthetic job through ``chakra_pipeline``: the terminal summary and report.html
lead with the job (its makespan, the slowest rank's; one line per what-if scenario with the
job's change in %), and the page stays small (under 2 MB; one rank section open however
many ranks; under 5,000 px tall at 1,400 px wide in headless Chromium, where installed)."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from chakra.cli.pipeline import main
from chakra.synth import SynthOptions, generate_job
from tests.views.page_checks import check_page_numbers, check_self_contained, chromium, page_height

RANKS = 64


def run_cli(traces: Path, out: Path) -> str:
    """``chakra_pipeline`` on ``traces`` into ``out``; what it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as done:
        main(["--trace-dir", str(traces), "--output-dir", str(out), "-j", "2", "--no-plot",
              "--log-level", "WARNING"])  # fmt: skip
    assert done.value.code == 0
    return printed.getvalue()


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The 64-rank job's folder, its terminal summary and its report.json (about 5 s)."""
    folder = tmp_path_factory.mktemp("job64")
    generate_job(SynthOptions(seed=1, ranks=RANKS, steps=1, ops_per_step=200), folder / "traces")
    printed = run_cli(folder / "traces", folder / "out")
    return folder / "out", printed, json.loads((folder / "out" / "report.json").read_text())


@pytest.fixture(scope="module")
def small_job(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The same job at 4 ranks: its output folder and terminal summary."""
    folder = tmp_path_factory.mktemp("job4")
    generate_job(SynthOptions(seed=1, ranks=4, steps=1, ops_per_step=20), folder / "traces")
    return folder / "out", run_cli(folder / "traces", folder / "out")


def job_change_pct(scenario: dict) -> float:
    """The job's change under a scenario, from its per-rank makespans alone: the slowest
    rank's makespan under it against the slowest rank's in the replay."""
    after = max(r["makespan_us"] for r in scenario["ranks"])
    before = max(r["replay_makespan_us"] for r in scenario["ranks"])
    return 100.0 * (after - before) / before


def test_terminal_prints_one_job_line_per_what_if(job: Any) -> None:
    _, printed, report = job
    lines = printed.splitlines()
    slowest = max(report["ranks"], key=lambda r: r["simulation"]["simulated_makespan_us"])
    makespan = slowest["simulation"]["simulated_makespan_us"]
    assert lines[0].startswith(f"job: {RANKS} ranks, makespan {makespan:,.0f} us simulated "
                               f"(slowest rank {slowest['rank']})")  # fmt: skip
    assert len(report["what_if"]) == 4 and all(s["ranks"] for s in report["what_if"])
    for scenario in report["what_if"]:
        pct = f"{job_change_pct(scenario):+.2f}%"
        hits = [line for line in lines if line.strip().startswith(scenario["name"] + " ")]
        assert len(hits) == 1, (scenario["name"], printed[:2000])
        assert hits[0].split()[len(scenario["name"].split())] == pct
    table = lines.index(next(line for line in lines if line.startswith("rank  host ops")))
    assert table > len(report["what_if"])  # the job's lines come first
    shown = [line for line in lines[table + 1 :] if re.match(r"\s+\d+\s", line)]
    assert len(shown) == 3  # 64 ranks: the slowest, median and fastest rows only
    assert "(61 more ranks in report.json and report.html" in printed


def test_a_small_job_lists_every_rank(small_job: Any) -> None:
    _, printed = small_job
    lines = printed.splitlines()
    table = lines.index(next(line for line in lines if line.startswith("rank  host ops")))
    assert [line.split()[0] for line in lines[table + 1 : table + 5]] == ["0", "1", "2", "3"]


def test_page_leads_with_the_job_and_shows_report_json(job: Any) -> None:
    out, _, report = job
    page = (out / "report.html").read_text()
    check_self_contained(page)
    assert check_page_numbers(page, report) > 1000
    first_rank = page.index('id="rank-details"')
    for k, scenario in enumerate(report["what_if"]):
        cell = f'data-json="/job/what_if/{k}/change_pct" data-unit="signed">'
        assert page.index(cell) < first_rank
        assert f"{cell}{job_change_pct(scenario):+.2f}%</td>" in page
    assert page.index('data-json="/job/simulated_makespan_us"') < page.index('id="ranks"')


def open_rank_sections(page: str) -> int:
    return len(re.findall(r'<details id="rank-\d+" class="rank" open>', page))


def test_page_is_bounded_in_the_number_of_ranks(job: Any, small_job: Any) -> None:
    out, _, report = job
    page = (out / "report.html").read_bytes()
    assert len(page) < 2_000_000
    small = (small_job[0] / "report.html").read_text()
    assert open_rank_sections(page.decode()) == open_rank_sections(small) == 1
    slowest = report["job"]["slowest_rank"]
    assert f'<details id="rank-{slowest}" class="rank" open>' in page.decode()
    # no raw format spec, no id with a thousands comma
    assert "{:" not in page.decode() and not re.search(r'data-unit="id">\d+,', page.decode())


def test_page_height_in_headless_chromium(job: Any, tmp_path: Path) -> None:
    """Skipped where no headless Chromium is installed (as on CI machines)."""
    browser = chromium()
    if browser is None:
        pytest.skip("no headless Chromium (chromium-headless-shell, chromium, google-chrome)")
    height = page_height(browser, job[0] / "report.html", tmp_path, width_px=1400)
    assert 1000 < height < 5000


def test_the_notebook_facade_has_the_job_tables(small_job: Any) -> None:
    pytest.importorskip("pandas")
    from chakra.analysis import Analysis

    out, _ = small_job
    report = json.loads((out / "report.json").read_text())
    analysis = Analysis(out)
    job = analysis.job()
    assert len(job) == 1 and job["slowest_rank"][0] == report["job"]["slowest_rank"]
    changes = analysis.job_what_if()
    assert list(changes["change_pct"]) == pytest.approx(
        [job_change_pct(s) for s in report["what_if"]]
    )
    ranks = analysis.rank_comparison()  # the page's four parts, adding up to the makespan
    parts = ranks[["compute_us", "communication_us", "unexplained_us", "idle_us"]].sum(axis=1)
    assert list(parts) == pytest.approx(list(ranks["makespan_us"]))


def test_terminal_says_what_bounds_the_slowest_rank_and_what_freeing_it_gives(
    small_job: Any,
) -> None:
    from chakra.ranks.rank_read import load_agreed
    from chakra.simulate import ScaleRule, simulate, what_if

    out, printed = small_job
    (line,) = [x for x in printed.splitlines() if x.startswith("  slowest rank ")]
    report = json.loads((out / "report.json").read_text())
    slowest = max(report["ranks"], key=lambda r: r["simulation"]["simulated_makespan_us"])
    assert line.startswith(f"  slowest rank {slowest['rank']}: GPU-bound")
    at_most = float(re.search(r"GPU compute free would give at most ([-+.\d]+)%", line)[1])
    # independently: the whole job replayed with every GPU compute kernel taking no time
    paths = [out / f"workload.{r}.et" for r in range(4)]
    graphs = load_agreed(paths)
    before = simulate(graphs).makespans()[slowest["rank"]]
    after = what_if(graphs, [ScaleRule.parse("compute@class:gpu=0")]).makespans()
    assert at_most == pytest.approx(100.0 * (after[slowest["rank"]] / before - 1), abs=0.01)


def _timeline_ranks(folder: Path) -> set[int]:
    """The ranks of timeline.json's simulated processes, from their names."""
    events = json.loads((folder / "timeline.json").read_text())["traceEvents"]
    names = [e["args"]["name"] for e in events if e.get("name") == "process_name"]
    return {int(n.split()[1]) for n in names if n.endswith("(simulated)")}


def test_the_timeline_shows_the_slowest_median_and_fastest_ranks(job: Any) -> None:
    """Above 16 ranks, timeline.json shows the ranks utilisation.png draws (all 64 were
    hundreds of MB at 1,000 ops per step), report.json says which, and no flow starts or
    ends on a rank it does not show."""
    out, _, report = job
    by_makespan = sorted(report["ranks"], key=lambda r: (r["simulation"]["simulated_makespan_us"],
                                                         r["rank"]))  # fmt: skip
    slowest, fastest = by_makespan[-1]["rank"], by_makespan[0]["rank"]
    shown = _timeline_ranks(out)
    assert report["timeline"] == {"ranks": sorted(shown), "window": None}
    assert {slowest, fastest} <= shown and len(shown) <= 3
    events = json.loads((out / "timeline.json").read_text())["traceEvents"]
    measured = {RANKS + r for r in shown}  # a measured process's pid: past every rank
    assert {e["pid"] for e in events} <= shown | measured
    flows = [e for e in events if e["ph"] in "sf"]
    assert flows and {e["pid"] for e in flows} <= shown


def test_every_rank_or_the_ranks_asked_for(job: Any, tmp_path: Path) -> None:
    out, _, _ = job
    traces = out.parent / "traces"
    for choice, expected in (("all", set(range(RANKS))), ("5,2,63", {2, 5, 63})):
        with contextlib.redirect_stdout(io.StringIO()), pytest.raises(SystemExit) as done:
            main(["--trace-dir", str(traces), "--output-dir", str(tmp_path / choice), "-j", "2",
                  "--no-plot", "--no-html", "--what-if", "none=gpu=1", "--timeline-ranks",
                  choice, "--log-level", "WARNING"])  # fmt: skip
        assert done.value.code == 0
        assert _timeline_ranks(tmp_path / choice) == expected


@pytest.mark.parametrize("choice", ["64", "two", "-1", ""])
def test_a_rank_not_in_the_job_is_a_usage_error(
    job: Any, tmp_path: Path, capsys: pytest.CaptureFixture, choice: str
) -> None:
    out, _, _ = job
    with pytest.raises(SystemExit) as done:
        main(["--trace-dir", str(out.parent / "traces"), "--output-dir", str(tmp_path / "o"),
              "--timeline-ranks", choice])  # fmt: skip
    assert done.value.code == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert said[-1].startswith("chakra_pipeline: error: ") and "timeline-ranks" in said[-1]
    assert not (tmp_path / "o").exists()
