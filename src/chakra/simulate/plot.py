"""``chakra_sim --plot``: utilisation of each GPU stream over time, measured vs simulated."""

from __future__ import annotations

from array import array
from typing import Any

from chakra.errors import ChakraError, PathLike
from chakra.simulate.engine import Engine
from chakra.simulate.model import NO_RESOURCE

BINS = 200


def utilisation(starts: Any, ends: Any, nodes: list[int], origin: float, span: float) -> list:
    """Busy fraction of one resource in each of ``BINS`` equal time bins."""
    width = span / BINS if span > 0 else 1.0
    busy = array("d", [0.0]) * BINS
    for node in nodes:
        begin, end = starts[node] - origin, ends[node] - origin
        first, last = int(begin // width), int(min(end, span - 1e-9) // width)
        for b in range(max(first, 0), min(last, BINS - 1) + 1):
            low, high = b * width, (b + 1) * width
            busy[b] += max(0.0, min(end, high) - max(begin, low))
    return [value / width for value in busy]


def plot_utilisation(engine: Engine, path: PathLike) -> None:
    """One panel per rank: each stream's utilisation over time, simulated (solid) and
    measured (dashed, when the graph carries measured starts). Writes a PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ChakraError("--plot needs matplotlib: pip install matplotlib") from exc
    figure, axes = plt.subplots(len(engine.graphs), 1, figsize=(10, 3 * len(engine.graphs)),
                                squeeze=False)  # fmt: skip
    for r, graph in enumerate(engine.graphs):
        axis = axes[r][0]
        start, end = engine.start[r], engine.end[r]
        origin, span = min(start), max(end) - min(start)
        measured = graph.measured_start_us
        measured_end = array("d", (s + d for s, d in zip(measured, graph.duration_us)))
        m_origin = min((s for s in measured if s >= 0), default=-1.0)
        for k, key in enumerate(graph.resources):
            if key[0] != "stream":
                continue
            nodes = [i for i, res in enumerate(graph.resource) if res == k and res != NO_RESOURCE]
            label = f"stream {key[2]}"
            line = axis.plot(utilisation(start, end, nodes, origin, span), label=label)
            if m_origin >= 0:
                timed = [i for i in nodes if measured[i] >= 0]
                axis.plot(utilisation(measured, measured_end, timed, m_origin, span), "--",
                          color=line[0].get_color())  # fmt: skip
        axis.set_title(
            f"rank {graph.rank}: GPU stream utilisation (solid simulated, dashed measured)"
        )
        axis.set_xlabel(f"time ({span / BINS:,.1f} us per bin)")
        axis.set_ylim(0, 1.05)
        if axis.get_legend_handles_labels()[0]:  # a CPU-only rank has no stream to name
            axis.legend(loc="upper right", fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
