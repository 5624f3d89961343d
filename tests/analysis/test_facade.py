"""chakra.analysis.Analysis: each table method returns what the view it stands for computes, every
table of report.html has a method, and without pandas the façade names the extra."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import msgspec
import pandas
import pytest

from chakra.analysis import Analysis
from chakra.analysis.tables import REPORT_TABLES
from chakra.convert import load_et_plus
from chakra.errors import MissingExtraError
from chakra.simulate import ScaleRule, SimOptions, simulate_files
from chakra.simulate.replay import what_if_of
from chakra.views import rank_views
from chakra.views.copy_bandwidth import copy_bandwidth, read_copy_sizes
from chakra.views.html_report import render_report_html
from chakra.views.launch_stats import job_launch_stats, measured_launches
from chakra.views.run_diff import diff_runs
from chakra.views.stream_queue import queue_lengths


@pytest.fixture(scope="module")
def analysis(pipeline_folder: Path) -> Analysis:
    return Analysis(pipeline_folder)


@pytest.fixture(scope="module")
def replay(pipeline_folder: Path) -> Any:
    """The views' own computation, from the run's .et files, replayed afresh."""
    report = json.loads((pipeline_folder / "report.json").read_text())
    ets = [str(pipeline_folder / r["et"]) for r in report["ranks"]]
    return simulate_files(ets, options=SimOptions(explain=True))


def records(table: pandas.DataFrame) -> list[dict]:
    return json.loads(table.to_json(orient="records"))


def rows(items: Any, rank: int) -> list[dict]:
    return [{"rank": rank, **msgspec.to_builtins(item)} for item in items]


def same(table: pandas.DataFrame, expected: list[dict]) -> None:
    got = records(table)
    assert len(got) == len(expected) > 0
    for row, want in zip(got, expected):
        assert {k: row[k] for k in want} == pytest.approx(want)


def test_the_view_tables_are_the_views_of_the_replay(analysis: Analysis, replay: Any) -> None:
    views = rank_views(replay)
    same(analysis.kernels(), [r for v in views for r in rows(v.kernels, v.rank)])
    same(analysis.stream_idle(), [r for v in views for r in rows(v.stream_idle, v.rank)])
    paths = [msgspec.to_builtins(v.critical_path) for v in views]
    same(analysis.critical_path(), [{k: p[k] for k in p if k != "segments"} for p in paths])
    segments = [r for v in views for r in rows(v.critical_path.segments, v.rank)]
    same(analysis.critical_path_segments(), segments)
    same(analysis.breakdown(), [msgspec.to_builtins(b) for v in views
                                for b in (v.breakdown, v.measured_breakdown)])  # fmt: skip
    overlaps = [r for v in views for r in rows((v.overlap, v.measured_overlap), v.rank)]
    same(analysis.overlap(), overlaps)


def test_the_run_tables_are_the_replays_summaries(analysis: Analysis, replay: Any) -> None:
    ranks = replay.ranks
    fields = ("simulated_makespan_us", "measured_makespan_us", "unexplained_us", "nodes")
    same(analysis.summary(), [{"rank": r.rank, **{f: getattr(r, f) for f in fields}}
                              for r in ranks])  # fmt: skip
    same(analysis.makespans(), [{"rank": r.rank, "model_only_makespan_us":
                                 r.model_only_makespan_us} for r in ranks])  # fmt: skip
    same(analysis.resources(), [row for r in ranks for row in rows(r.resources, r.rank)])
    names = [{"rank": r, "name": e.name, "total_us": e.total_us}
             for r, path in enumerate(replay.critical_paths) for e in path]  # fmt: skip
    same(analysis.critical_path_names(), names)
    slowest = max(r.simulated_makespan_us for r in ranks)
    same(analysis.rank_comparison(), [{"rank": r.rank, "slowest": r.simulated_makespan_us ==
                                       slowest} for r in ranks])  # fmt: skip


def test_what_if_has_a_row_per_scenario_and_rank(analysis: Analysis, pipeline_folder: Path) -> None:
    report = json.loads((pipeline_folder / "report.json").read_text())
    expected = [{"scenario": s["name"], "rank": r["rank"], "change_pct": r["change_pct"]}
                for s in report["what_if"] for r in s["ranks"]]  # fmt: skip
    same(analysis.what_if().dropna(subset=["rank"]), expected)
    assert list(analysis.agreement().columns) == ["filled_in", "count"]


def test_the_hta_views_are_their_functions(
    analysis: Analysis, replay: Any, pipeline_folder: Path
) -> None:
    et_plus = [load_et_plus(p) for p in sorted(pipeline_folder.glob("rank*.et_plus.json"))]
    launches = job_launch_stats(replay, [measured_launches(t) for t in et_plus])
    same(analysis.launch_stats(), [msgspec.to_builtins(s) for s in launches])
    assert analysis.launch_stats()["launch_call_us"].notna().all()  # from the ET+
    queues = queue_lengths(replay)
    summaries = [msgspec.to_builtins(q) for q in queues]
    for summary in summaries:
        del summary["times_us"], summary["lengths"]
    same(analysis.queue_length(), summaries)
    assert len(analysis.queue_series()) == sum(len(q.times_us) for q in queues)
    sizes = [read_copy_sizes(p) for p in analysis.files.graphs]
    same(analysis.copy_bandwidth(), [msgspec.to_builtins(c) for c in copy_bandwidth(replay, sizes)])


def test_diff_against_a_what_if(analysis: Analysis, replay: Any) -> None:
    found = diff_runs(replay, what_if_of(replay, [ScaleRule.parse("gpu=0.5")]))
    same(analysis.diff(scale=["gpu=0.5"]), [msgspec.to_builtins(c) for c in found.names])
    same(analysis.path_diff(scale=["gpu=0.5"]), [msgspec.to_builtins(p) for p in found.path])
    assert analysis.diff(analysis.files.graphs).empty  # a run against itself: no change


def test_bare_et_files_give_the_same_tables(analysis: Analysis) -> None:
    bare = Analysis(analysis.files.graphs)
    same(bare.kernels(), records(analysis.kernels()))
    same(bare.critical_path(), records(analysis.critical_path()))
    assert len(bare.what_if()) == len(analysis.what_if())
    assert bare.launch_stats()["launch_call_us"].isna().all()  # no ET+: unknown


def test_every_table_of_the_report_has_a_method(pipeline_folder: Path) -> None:
    report = json.loads((pipeline_folder / "report.json").read_text())
    report["agreement"]["counts"] = {"collective sizes": 2}  # the agreement's table too
    page = render_report_html(report)
    heading, counts, seen = None, {}, set()
    for tag, text in re.findall(r"<(h[23]|table)[^>]*>(.*?)</\1>", page, re.S):
        if tag != "table":
            heading = re.sub(r"<[^>]+>", "", text).strip()
            counts = {}
            continue
        assert heading in REPORT_TABLES, f"report.html's table under {heading!r} has no method"
        counts[heading] = counts.get(heading, 0) + 1
        assert counts[heading] <= len(REPORT_TABLES[heading]), heading
        seen.add(heading)
    assert seen == set(REPORT_TABLES)  # the check saw every table of the page
    for methods in REPORT_TABLES.values():
        for method in methods:
            assert callable(getattr(Analysis, method)), method


def test_without_pandas_the_facade_names_the_extra(
    pipeline_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'chakra\[notebook\]'") as info:
        Analysis(pipeline_folder)
    assert "\n" not in str(info.value)
