"""Pictures of a run: busy fraction over time of every host thread and GPU stream, simulated
and measured side by side on one time axis (µs) shared by all ranks
(``chakra_sim --plot``, the pipeline's ``utilisation.png``); and the makespans of each rank,
measured, replayed, model-only and what-if, as grouped bars.

Figures are built with :class:`matplotlib.figure.Figure` (no pyplot state), returned by the
``*_figure`` functions so that callers and tests can inspect them before saving. The
``plot_*`` functions save them atomically in the format their path's extension names (any
that matplotlib writes: png, svg, pdf...; :func:`image_format`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import numpy as np

from chakra.errors import ChakraError, PathLike, PlotFormatError
from chakra.fileio import AtomicGroup, atomic_output
from chakra.simulate.analysis import unexplained_nodes
from chakra.simulate.resources import display_order
from chakra.simulate.result import RankResult
from chakra.simulate.sim_graph import SimGraph
from chakra.simulate.sim_result import SimResult
from chakra.views.busy import BINS, utilisation

#: Height of a resource's band in a utilisation panel (1: bands touch).
BAND = 0.85
TIME_LABEL = "time since the job's first start (µs)"
#: What matplotlib writes without optional packages, if it cannot be asked.
CORE_IMAGE_FORMATS = ("eps", "pdf", "png", "ps", "svg", "svgz")


def image_formats() -> tuple[str, ...]:
    """The extensions (without dot, lower case) the plots can be saved as."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        return CORE_IMAGE_FORMATS
    return tuple(sorted(FigureCanvasBase.get_supported_filetypes()))


def image_format(path: PathLike) -> str:
    """The image format named by ``path``'s extension (``png`` when it has none); one that
    matplotlib cannot write raises :class:`PlotFormatError`."""
    suffix = Path(str(path)).suffix.lower().lstrip(".")
    if not suffix:
        return "png"
    known = image_formats()
    if suffix not in known:
        raise PlotFormatError(
            f"{path}: cannot draw a .{suffix} image; use one of {', '.join(known)}"
        )
    return suffix


def save_figure(figure: Any, path: PathLike, group: Optional[AtomicGroup] = None) -> None:
    """Write ``figure`` to ``path`` in the format of its extension (:func:`image_format`),
    atomically: a missing folder or a failed write raises ``FileAccessError`` and leaves no
    file behind; with a ``group``, in place when the group commits."""
    fmt = image_format(path)
    with atomic_output(path, group=group) as out:
        figure.savefig(out, format=fmt, dpi=100)


#: What to install for the pictures (matplotlib is an optional extra).
INSTALL_PLOT = "pip install 'chakra[plot]'"


def plotting_available() -> bool:
    """Whether matplotlib can be imported (the pictures need it; report.html does not)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _matplotlib_figure() -> Any:
    if not plotting_available():
        raise ChakraError(f"--plot needs matplotlib: {INSTALL_PLOT}")
    from matplotlib.figure import Figure

    return Figure


def _measured(graph: SimGraph) -> tuple[np.ndarray, np.ndarray]:
    starts = np.frombuffer(graph.measured_start_us, dtype=np.float64)
    return starts, starts + np.frombuffer(graph.duration_us, dtype=np.float64)


#: How unexplained time (``[idle]``/``[delay]`` nodes) is drawn: grey, hatched, stacked on
#: the real busy fraction of its resource.
UNEXPLAINED_COLOR, UNEXPLAINED_HATCH = "0.7", "////"


def _used(graph: SimGraph, schedules: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[int]:
    """The resources to draw, in :func:`display_order`: those some node holds for a while
    in one of ``schedules`` (a never-busy resource, such as the host ET's zero-length root
    thread, gets no band)."""
    resource = np.frombuffer(graph.resource, dtype=np.int64)
    held: set[int] = set()
    for starts, ends in schedules:
        held.update(resource[(starts >= 0) & (ends > starts)].tolist())
    return [slot for slot in display_order(graph.resources) if slot in held]


def _panel(axis: Any, graph: SimGraph, starts: np.ndarray, ends: np.ndarray, origin: float,
           span: float, order: Sequence[int]) -> None:  # fmt: skip
    """One band per resource of ``order``: its real busy fraction per bin, then its
    unexplained fraction (grey, hatched) on top of it."""
    resource = np.frombuffer(graph.resource, dtype=np.int64)
    known = starts >= 0
    unexplained = unexplained_nodes(graph)
    centers = (np.arange(BINS) + 0.5) * (span / BINS)
    for row, slot in enumerate(order):
        mine = (resource == slot) & known
        real = np.flatnonzero(mine & ~unexplained).tolist()
        busy = np.minimum(np.asarray(utilisation(starts, ends, real, origin, span)), 1.0)
        color = "tab:blue" if graph.resources[slot].is_host else "tab:orange"
        top = row + BAND * busy
        axis.fill_between(centers, row, top, step="mid", color=color, linewidth=0)
        idle = np.flatnonzero(mine & unexplained).tolist()
        if idle:
            extra = np.asarray(utilisation(starts, ends, idle, origin, span))
            axis.fill_between(
                centers, top, row + BAND * np.minimum(busy + extra, 1.0), step="mid",
                facecolor=UNEXPLAINED_COLOR, edgecolor="0.45", hatch=UNEXPLAINED_HATCH,
                linewidth=0, label="unexplained",
            )  # fmt: skip
    axis.set_yticks([row + BAND / 2 for row in range(len(order))])
    axis.set_yticklabels([graph.resources[k].plot_label for k in order], fontsize="small")
    axis.set_ylim(0, max(len(order), 1))


def utilisation_figure(result: SimResult, ranks: Optional[Sequence[int]] = None) -> Any:
    """A matplotlib Figure: one row per rank (``ranks``: the ranks to draw, by rank id;
    None: all); a column of the simulated schedule and, when
    the graphs carry measured starts, one of the measured schedule. In each panel every
    host thread (blue) and GPU stream (orange) is a band whose height is its busy fraction
    in each of ``BINS`` bins, with its unexplained ``[idle]``/``[delay]`` time stacked on top
    in grey, hatched (not busy). Every panel shares one x axis: µs since the job's first start
    (simulated: the first simulated start; measured: the first measured start of any
    rank), up to the longer of the two spans."""
    figure_type = _matplotlib_figure()
    graphs = result.graphs
    simulated = [
        (np.frombuffer(start, np.float64), np.frombuffer(end, np.float64))
        for start, end in zip(result.start, result.end)
    ]
    measured = [_measured(graph) for graph in graphs]
    columns = [("simulated", simulated)]
    if any((starts >= 0).any() for starts, _ in measured):
        columns.append(("measured", measured))
    spans, origins = [], []
    for _, schedules in columns:
        firsts = [s[s >= 0].min() for s, _ in schedules if (s >= 0).any()]
        lasts = [e[s >= 0].max() for s, e in schedules if (s >= 0).any()]
        origins.append(min(firsts, default=0.0))
        spans.append(max(lasts, default=0.0) - origins[-1])
    span = max(max(spans), 1e-9)
    drawn = [k for k, graph in enumerate(graphs) if ranks is None or graph.rank in ranks]
    orders = {k: _used(graphs[k], [schedules[k] for _, schedules in columns]) for k in drawn}
    rows = max((len(order) for order in orders.values()), default=1)
    figure = figure_type(figsize=(7 * len(columns), (0.35 * rows + 1.2) * max(len(drawn), 1)))
    axes = figure.subplots(max(len(drawn), 1), len(columns), squeeze=False, sharex=True)
    for c, ((title, schedules), origin) in enumerate(zip(columns, origins)):
        for r, k in enumerate(drawn):
            graph, axis = graphs[k], axes[r][c]
            starts, ends = schedules[k]
            _panel(axis, graph, starts, ends, origin, span, orders[k])
            axis.set_title(f"rank {graph.rank} {title}", fontsize="medium")
            axis.set_xlim(0, span)
        axes[-1][c].set_xlabel(TIME_LABEL)
    shown = "" if len(drawn) == len(graphs) else f" (ranks drawn: {len(drawn)} of {len(graphs)})"
    figure.suptitle(
        "busy fraction of each host thread (blue) and GPU stream (orange); "
        f"unexplained [idle]/[delay] time grey, hatched{shown}"
    )
    figure.tight_layout()
    return figure


def plot_utilisation(
    result: SimResult,
    path: PathLike,
    group: Optional[AtomicGroup] = None,
    ranks: Optional[Sequence[int]] = None,
) -> None:
    """Write :func:`utilisation_figure` of ``result`` (``ranks``: those to draw, None:
    all) to ``path`` (:func:`save_figure`)."""
    save_figure(utilisation_figure(result, ranks), path, group)


def makespan_figure(results: Sequence[RankResult],
                    what_if: Optional[Sequence[Optional[float]]] = None) -> Any:  # fmt: skip
    """A matplotlib Figure: per rank, bars of its makespan (µs) measured, replayed
    (simulated), model-only (``rank_results(..., explain=True)``) and under a what-if
    (``what_if[r]``, e.g. ``chakra_sim --scale``'s makespans); a series is left out when
    no rank has its value."""
    figure_type = _matplotlib_figure()
    extra = list(what_if) if what_if is not None else [None] * len(results)
    series = [
        ("measured", [r.measured_makespan_us for r in results]),
        ("replay", [r.simulated_makespan_us for r in results]),
        ("model-only", [r.model_only_makespan_us for r in results]),
        ("what-if", extra),
    ]
    series = [(name, values) for name, values in series if any(v is not None for v in values)]
    figure = figure_type(figsize=(max(4.0, 1.2 * len(results) + 2), 3.5))
    axis = figure.subplots()
    width = 0.8 / max(len(series), 1)
    positions = np.arange(len(results), dtype=np.float64)
    for k, (name, values) in enumerate(series):
        heights = [np.nan if v is None else v for v in values]
        axis.bar(positions + (k - (len(series) - 1) / 2) * width, heights, width, label=name)
    axis.set_xticks(positions)
    axis.set_xticklabels([f"rank {r.rank}" for r in results])
    axis.set_ylabel("makespan (µs)")
    axis.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    figure.tight_layout()
    return figure


def plot_makespans(results: Sequence[RankResult], path: PathLike,
                   what_if: Optional[Sequence[Optional[float]]] = None,
                   group: Optional[AtomicGroup] = None) -> None:  # fmt: skip
    """Write :func:`makespan_figure` to ``path`` (:func:`save_figure`)."""
    save_figure(makespan_figure(results, what_if), path, group)
