"""``report.html``: the formatting rule, escaping, a self-contained page, and the page of a
real 2-rank run (and of a synthetic GPU job) showing the numbers of its report.json, read
back after headless Chromium rendered it where one is installed."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from chakra.pipeline import RankFiles, run_pipeline
from chakra.simulate import rank_results
from chakra.synth import SynthOptions, generate_job
from chakra.views.busy import busy_series
from chakra.views.html_numbers import At, format_value, resolve
from chakra.views.html_report import render_report_html
from tests.conftest import REPO_ROOT
from tests.simulate.test_engine import node, simulate
from tests.views.page_checks import (
    check_page_numbers,
    check_self_contained,
    chromium,
    read_page,
    rendered_dom,
    required_pointers,
)

GLOO = REPO_ROOT / "tests" / "data" / "pytorch213" / "gloo_2rank"
EVIL = 'void k<float, 2>(a&b) </td><script>alert("x")</script>'


@pytest.fixture(scope="module")
def gloo_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The pipeline on the 2-rank gloo recording (CPU only), default what-if scenarios."""
    ranks = [RankFiles(r, GLOO / f"rank{r}.host_et.json.gz", GLOO / f"rank{r}.kineto.json.gz")
             for r in (0, 1)]  # fmt: skip
    return run_pipeline(ranks, tmp_path_factory.mktemp("gloo"), plot=False)


@pytest.fixture(scope="module")
def gpu_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The pipeline on a small synthetic 2-rank GPU job: kernels, streams, NCCL."""
    folder = tmp_path_factory.mktemp("synth")
    generate_job(SynthOptions(seed=1, ranks=2, steps=1, ops_per_step=70), folder / "traces")
    ranks = [RankFiles(r, folder / "traces" / f"rank{r}.host_et.json",
                       folder / "traces" / f"rank{r}.kineto.json") for r in (0, 1)]  # fmt: skip
    return run_pipeline(ranks, folder / "out", plot=False)


def report_of(result: Any) -> dict:
    return json.loads(result.report.read_text())


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [(26665.369, "us", "26,665"), (0.4, "us", "0"), (47.1557, "pct", "47.2%"),
     (-14.6014, "signed", "-14.60%"), (0.0003, "signed", "+0.00%"), (0.31196, "ratio", "31.2%"),
     (1024, "count", "1,024"), (None, "us", "-"), (None, "signed", "-")],
)  # fmt: skip
def test_the_formatting_rule(value: Any, unit: str, text: str) -> None:
    assert format_value(value, unit) == text


def test_busy_series_adds_up_to_each_resources_busy_time() -> None:
    # rank 0: cpu 1 (0-10) launches kernels 2 (stream 7, 10-50) and 3 (stream 8, 10-30);
    # cpu 4 (50-55) waits for kernel 2. Rank 1: one cpu op of 20 us
    engine = simulate([node(1, 10), node(2, 40, (1,), stream=7), node(3, 20, (1,), stream=8),
                       node(4, 5, (2,))], [node(1, 20)])  # fmt: skip
    series = busy_series(engine)
    assert series.span_us == 55 and series.bins == 200
    for rank, result in zip(series.ranks, rank_results(engine)):
        busy = {u.resource.replace("device 0 ", ""): u.busy_us for u in result.resources}
        shown = {b.resource: sum(b.simulated) * series.span_us / series.bins for b in rank.bands}
        assert shown == pytest.approx(busy)
        assert [b.gpu for b in rank.bands] == sorted(b.gpu for b in rank.bands)  # threads first
        assert all(b.measured is None for b in rank.bands)  # hand-made: nothing measured


def test_pointers_name_the_value_they_show() -> None:
    document = {"ranks": [{"a/b": {"x": 1.5}}], "what_if": []}
    cell = At(document)["ranks"][0]["a/b"]["x"]
    assert cell.path == "/ranks/0/a~1b/x" and resolve(document, cell.path) == 1.5
    assert At(document)["ranks"][0]["missing"].cell("us") == (
        '<td data-json="/ranks/0/missing" data-unit="us">-</td>')  # fmt: skip


def test_gloo_page_is_self_contained_and_shows_report_json(gloo_run: Any) -> None:
    assert gloo_run.html == gloo_run.output_dir / "report.html"
    page, report = gloo_run.html.read_text(), report_of(gloo_run)
    check_self_contained(page)
    assert check_page_numbers(page, report) >= len(required_pointers(report)) > 30
    reader = read_page(page)
    assert {f"rank-{r}" for r in (0, 1)} <= reader.ids and "<svg" in page
    # the CPU-only job: the GPU scenario is skipped with its reason, the others ran
    assert "skipped: gpu=0.5 matches no node" in page
    assert [bool(w["ranks"]) for w in report["what_if"]] == [False, True, True, True]


def test_trace_names_are_escaped(gpu_run: Any) -> None:
    report = report_of(gpu_run)
    evil = copy.deepcopy(report)
    evil["ranks"][0]["views"]["kernels"][0]["name"] = EVIL
    evil["ranks"][0]["views"]["critical_path"]["segments"][0]["name"] = EVIL
    evil["what_if"][0]["name"] = EVIL
    page = render_report_html(evil, title=EVIL)
    assert "<script" not in page and "alert(&quot;x&quot;)" in page
    check_self_contained(page)
    reader = read_page(page)
    # whole: the kernel and the path segment, and the scenario in each rank's what-if table
    assert reader.td_texts.count(EVIL) == 2 + len(evil["ranks"])
    check_page_numbers(page, evil)  # the table structure survived


def test_gpu_page_shows_kernels_idle_causes_and_what_if(gpu_run: Any) -> None:
    page, report = gpu_run.html.read_text(), report_of(gpu_run)
    check_self_contained(page)
    assert check_page_numbers(page, report) > 0
    cells = read_page(page).cells
    kernel = report["ranks"][1]["views"]["kernels"][0]
    assert cells["/ranks/1/views/kernels/0/share"] == ("ratio", f"{kernel['share']:.1%}")
    idle = report["ranks"][0]["views"]["stream_idle"][0]
    assert cells["/ranks/0/views/stream_idle/0/cpu_launch_us"][1] == f"{idle['cpu_launch_us']:,.0f}"
    assert all(w["ranks"] for w in report["what_if"])  # a GPU job: every default applies


def test_the_checker_catches_a_changed_number(gloo_run: Any) -> None:
    page, report = gloo_run.html.read_text(), report_of(gloo_run)
    assert check_page_numbers(page, report) > 0
    pointers = ("/ranks/1/simulation/simulated_makespan_us", "/ranks/0/views/breakdown/idle_pct",
                "/what_if/1/ranks/1/makespan_us")  # fmt: skip
    for pointer in pointers:
        changed = copy.deepcopy(report)
        *path, key = pointer.split("/")[1:]
        holder = resolve(changed, "/" + "/".join(path))
        holder[key] = holder[key] * 1.01 + 1
        with pytest.raises(AssertionError, match=pointer):
            check_page_numbers(page, changed)
    hidden = page.replace('data-json="/ranks/1/simulation/error_pct"', 'data-x=""')
    with pytest.raises(AssertionError, match="/ranks/1/simulation/error_pct: not on the page"):
        check_page_numbers(hidden, report)


def test_a_report_without_views_or_what_if_still_renders() -> None:
    report = {"ranks": [{"rank": 3, "link": {}, "convert": {}, "views": None, "critical_path": [],
                         "simulation": {"simulated_makespan_us": 10.0, "resources": [],
                                        "measured_makespan_us": None, "error_pct": None}}],
              "agreement": {}}  # fmt: skip
    page = render_report_html(report)
    check_self_contained(page)
    cells = read_page(page).cells
    assert cells["/ranks/0/simulation/simulated_makespan_us"] == ("us", "10")
    assert cells["/ranks/0/simulation/error_pct"] == ("signed", "-")
    assert "No what-if scenarios were run." in page


@pytest.mark.parametrize("run", ["gloo_run", "gpu_run"])
@pytest.mark.slow
def test_report_html_in_headless_chromium(request: pytest.FixtureRequest, run: str) -> None:
    """Skipped where no headless Chromium is installed (even under CI: "where available")."""
    browser = chromium()
    if browser is None:
        pytest.skip("no headless Chromium (chromium-headless-shell, chromium, google-chrome)")
    result = request.getfixturevalue(run)
    report = report_of(result)
    dom = rendered_dom(browser, Path(result.html))
    assert check_page_numbers(dom, report) >= len(required_pointers(report))
    check_self_contained(dom)
    text = read_page(dom)
    for entry in report["ranks"]:  # spelled out once more without the library's rule
        simulation, r = entry["simulation"], entry["rank"]
        assert f"{simulation['simulated_makespan_us']:,.0f}" in text.td_texts
        assert f"{simulation['error_pct']:+.2f}%" in text.td_texts
        assert f"rank-{r}" in text.ids


def test_each_rank_section_lists_its_training_steps(gloo_run: Any) -> None:
    # the gloo recording has ProfilerStep#N ops: one row per step in each rank's section,
    # whose cells point at report.json's views.steps (checked by check_page_numbers)
    report = report_of(gloo_run)
    page = gloo_run.html.read_text()
    sections = page.split('<details id="rank-')[1:]
    assert len(sections) == len(report["ranks"]) == 2
    for entry, section in zip(sorted(report["ranks"], key=lambda e: e["rank"]), sections):
        steps = entry["views"]["steps"]
        assert [s["step"] for s in steps] and all(s["measured_us"] for s in steps)
        table = section.split("<h3>Steps</h3>", 1)[1].split("</table>", 1)[0]
        assert table.count("<tr") == len(steps) + 1  # a header row, then one per step
    assert check_page_numbers(page, report) > 0


def test_busy_bands_draw_unexplained_time_grey_above_the_busy_time() -> None:
    from chakra.views.svg_charts import THREAD, UNEXPLAINED, Band, band_panel

    # bin 1: busy 0.25 and [idle] 0.5: the grey path reaches 0.75 of the row, blue 0.25
    plain = band_panel("t", [Band("thread 1", THREAD, [0.0, 0.25])], 100.0)
    assert UNEXPLAINED not in plain
    panel = band_panel("t", [Band("thread 1", THREAD, [0.0, 0.25], [0.0, 0.5])], 100.0)
    grey = panel.split(f'fill="{UNEXPLAINED}"')[0].rsplit("<path", 1)[1]
    blue = panel.split(f'fill="{THREAD}"')[0].rsplit("<path", 1)[1]
    assert grey != blue and panel.index(UNEXPLAINED) < panel.index(f'fill="{THREAD}"')


def test_a_rank_with_idle_gaps_shows_them_grey_in_its_busy_chart(gpu_run: Any) -> None:
    import numpy as np

    from chakra.simulate import load_graph
    from chakra.views.svg_charts import UNEXPLAINED

    # the synthetic job's threads sleep between ops: [idle] nodes held by a thread
    graph = load_graph(gpu_run.output_dir / "workload.0.et", 0)
    held = np.frombuffer(graph.resource, dtype=np.int64) >= 0
    assert any(name == "[idle]" and held[i] for i, name in enumerate(graph.names))
    page = gpu_run.html.read_text()
    busy = page.split("<h3>Busy fraction over time</h3>", 1)[1].split("<h3>", 1)[0]
    assert f'fill="{UNEXPLAINED}"' in busy
