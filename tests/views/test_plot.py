"""The plots: one µs time axis shared by every rank, threads and streams both, measured
beside simulated; the makespan bars."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chakra.errors import FileAccessError
from chakra.simulate import SimOptions, SimResult, build_graph, rank_results, simulate
from chakra.views.busy import BINS, busy_before, utilisation
from chakra.views.plot import (
    UNEXPLAINED_HATCH,
    PlotFormatError,
    image_format,
    makespan_figure,
    plot_makespans,
    plot_utilisation,
    utilisation_figure,
)
from tests.simulate.test_engine import node

PNG = b"\x89PNG\r\n\x1a\n"


def two_ranks(measured: bool = False) -> SimResult:
    # rank 0 ends at 40 us, rank 1 at 300 us
    short = [node(1, 10), node(2, 30, (1,), stream=7)]
    long = [node(1, 100), node(2, 200, (1,), stream=7)]
    if measured:
        for item, start in zip(short + long, (1000, 1010, 1000, 1100)):
            item.start_time_micros = start
    return simulate([build_graph(short, 0), build_graph(long, 1)], SimOptions(explain=False))


def test_busy_before_and_bins() -> None:
    edges = np.array([0.0, 5.0, 15.0, 25.0, 40.0])
    busy = busy_before(edges, np.array([20.0, 0.0]), np.array([30.0, 10.0]))
    assert busy.tolist() == [0, 5, 10, 15, 20]
    bins = utilisation([0.0, 60.0], [50.0, 80.0], [0], 0.0, 100.0)  # node 1 left out
    assert bins == pytest.approx([1.0] * (BINS // 2) + [0.0] * (BINS // 2))


def test_one_time_axis_in_us_for_every_rank(tmp_path: Path) -> None:
    figure = utilisation_figure(two_ranks())
    assert len(figure.axes) == 2  # no measured starts: the simulated column only
    assert [axis.get_xlim() for axis in figure.axes] == [(0.0, 300.0)] * 2
    assert "µs" in figure.axes[-1].get_xlabel()
    labels = [[t.get_text() for t in axis.get_yticklabels()] for axis in figure.axes]
    assert labels == [["thread 1", "stream 7"]] * 2
    # rank 1's stream: idle for its first third, busy after
    band = figure.axes[1].collections[1].get_paths()[0].vertices
    assert band[:, 1].max() == pytest.approx(1 + 0.85)
    out = tmp_path / "util.png"
    plot_utilisation(two_ranks(), out)
    assert out.read_bytes()[:8] == PNG


def test_measured_beside_simulated() -> None:
    figure = utilisation_figure(two_ranks(measured=True))
    titles = [axis.get_title() for axis in figure.axes]
    assert titles == ["rank 0 simulated", "rank 0 measured", "rank 1 simulated",
                      "rank 1 measured"]  # fmt: skip
    assert {axis.get_xlim() for axis in figure.axes} == {(0.0, 300.0)}


def test_makespan_bars(tmp_path: Path) -> None:
    engine = two_ranks(measured=True)
    results = rank_results(engine, explain=True)
    figure = makespan_figure(results, [20.0, 150.0])
    axis = figure.axes[0]
    assert axis.get_ylabel() == "makespan (µs)"
    heights = [[bar.get_height() for bar in bars] for bars in axis.containers]
    assert [text.get_text() for text in axis.get_legend().get_texts()] == [
        "measured", "replay", "model-only", "what-if"]  # fmt: skip
    assert heights == [[40, 300], [40, 300], [40, 300], [20, 150]]
    assert len(makespan_figure(rank_results(two_ranks())).axes[0].containers) == 1
    out = tmp_path / "makespans.png"
    plot_makespans(results, out)
    assert out.read_bytes()[:8] == PNG


def test_formats_from_the_extension_and_atomic_writes(tmp_path: Path) -> None:
    results = rank_results(two_ranks(measured=True), explain=True)
    assert (image_format("a.PNG"), image_format("a.svg"), image_format("plain")) == (
        "png", "svg", "png")  # fmt: skip
    with pytest.raises(PlotFormatError, match=r"^u\.xyz: cannot draw a \.xyz image; use one of"):
        image_format("u.xyz")
    plot_makespans(results, tmp_path / "m.pdf")
    assert (tmp_path / "m.pdf").read_bytes()[:5] == b"%PDF-"
    with pytest.raises(FileAccessError, match="cannot write"):
        plot_utilisation(two_ranks(), tmp_path / "missing" / "u.png")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pdf"]  # no partial file left


def test_unexplained_time_is_drawn_apart_from_busy_time() -> None:
    # thread 1: A (0-10), an [idle] gap (10-30), B (30-40): busy half the time, the gap
    # stacked on top in grey, hatched
    gap = node(2, 20, (1,))
    gap.name = "[idle]"
    result = simulate([build_graph([node(1, 10), gap, node(3, 10, (2,))], 0)],
                      SimOptions(explain=False))  # fmt: skip
    (axis,) = utilisation_figure(result).axes
    busy, unexplained = axis.collections
    assert busy.get_hatch() is None and unexplained.get_hatch() == UNEXPLAINED_HATCH
    assert tuple(unexplained.get_facecolor()[0][:3]) == pytest.approx((0.7, 0.7, 0.7))
    # the busy band is full while A or B runs, empty during the gap; the grey one the reverse
    top = busy.get_paths()[0].vertices[:, 1]
    assert top.max() == pytest.approx(0.85) and top.min() == pytest.approx(0)
    grey = unexplained.get_paths()[0].vertices
    inside = grey[(grey[:, 0] > 12) & (grey[:, 0] < 28), 1]  # the gap: all of the band
    outside = grey[(grey[:, 0] < 8) | (grey[:, 0] > 32), 1]  # A, B: no grey above busy
    assert inside.max() == pytest.approx(0.85) and inside.min() == pytest.approx(0)
    assert len(outside) and outside.tolist() == pytest.approx([0.85] * len(outside))


def test_some_ranks_only_on_the_axis_of_every_rank() -> None:
    # rank 1 alone: its panel keeps the job's axis (rank 1 ends at 300 us, rank 0 at 40 us)
    figure = utilisation_figure(two_ranks(), ranks=(1,))
    assert [axis.get_title() for axis in figure.axes] == ["rank 1 simulated"]
    assert figure.axes[0].get_xlim() == (0.0, 300.0)
    assert "ranks drawn: 1 of 2" in figure._suptitle.get_text()
    short = utilisation_figure(two_ranks(), ranks=(0,))
    assert short.axes[0].get_xlim() == (0.0, 300.0)  # not rank 0's own 40 us


def test_the_pipeline_draws_every_rank_of_a_small_job_only() -> None:
    from chakra.views.job import JobSummary, shown_ranks

    job = JobSummary(64, 100.0, slowest_rank=40, fastest_rank=12, median_rank=7, spread_us=5.0,
                     spread_ratio=1.01, measured_makespan_us=None, measured_slowest_rank=None,
                     ranks=[], what_if=[])  # fmt: skip
    assert shown_ranks(job, 16) is None
    assert shown_ranks(job, 64) == (7, 12, 40)


def test_a_resource_never_busy_gets_no_band(capsys: pytest.CaptureFixture) -> None:
    # thread 0 holds only a zero-length root (as the host ET's process root); thread 1
    # and stream 7 run: utilisation.png and chakra_sim's busy lines leave thread 0 out
    from chakra.cli.sim import _print_rank

    nodes = [node(1, 0, tid=0), node(2, 10, (1,)), node(3, 30, (2,), stream=7)]
    result = simulate([build_graph(nodes, 0)], SimOptions(explain=False))
    (axis,) = utilisation_figure(result).axes
    assert [t.get_text() for t in axis.get_yticklabels()] == ["thread 1", "stream 7"]
    (summary,) = rank_results(result)
    assert "thread 0" in [use.resource for use in summary.resources]  # report.json keeps it
    _print_rank(summary, "a.et", [], None)
    printed = capsys.readouterr().out
    assert "  thread 1 " in printed and "  thread 0 " not in printed
    assert "(1 never busy, left out: thread 0)" in printed
