"""The alpha-beta network model and its use in what-if runs; the comparison timeline."""

from __future__ import annotations

import pytest

from chakra.errors import ChakraError
from chakra.et import set_attr
from chakra.simulate import SimOptions, build_graph, simulate
from chakra.simulate.engine import Engine
from chakra.simulate.network import NetworkModel
from chakra.views.timeline import chrome_trace
from tests.simulate.test_engine import node

MB = 1_000_000


@pytest.mark.parametrize(("topology", "comm_type", "ranks", "expected_us"), [
    ("ring", 0, 4, 6 * 5 + 1.5 * MB / 100e3),    # all_reduce: 2(n-1) steps, 2(n-1)/n bytes
    ("switch", 0, 4, 2 * 5 + 1.5 * MB / 100e3),
    ("ring", 2, 4, 3 * 5 + 0.75 * MB / 100e3),   # all_gather: n-1 steps, (n-1)/n bytes
    ("ring", 5, 4, 3 * 5 + MB / 100e3),          # broadcast: n-1 steps, all bytes
    ("switch", -1, 2, 5 + MB / 100e3),           # send/recv
    ("ring", 9, 4, 3 * 5),                       # barrier: latency only
    ("ring", 0, 1, 0.0),                         # alone: nothing to move
])  # fmt: skip
def test_alpha_beta_times(topology: str, comm_type: int, ranks: int, expected_us: float) -> None:
    model = NetworkModel(topology, bandwidth_gbps=100, latency_us=5)
    assert model.duration_us(comm_type, MB, ranks) == pytest.approx(expected_us)


def test_parse() -> None:
    assert NetworkModel.parse("ring:100:5") == NetworkModel("ring", 100.0, 5.0)
    for text in ("ring", "mesh:1:1", "ring:0:1", "ring:10:-1", "ring:a:b"):
        with pytest.raises(ChakraError, match=r"expected ring\|switch"):
            NetworkModel.parse(text)


def test_collectives_use_the_model_in_what_if_runs() -> None:
    ranks = []
    for rank in range(2):
        coll = node(2, 999, (1,), stream=9, coll="0")
        set_attr(coll, "comm_size", MB)
        ranks.append([node(1, 10 * (rank + 1)), coll])
    engine = Engine([build_graph(nodes, r) for r, nodes in enumerate(ranks)],
                    NetworkModel("switch", 100, 5))  # fmt: skip
    engine.run()
    # both ready by 20 us; all_reduce on 2 ranks over a switch: 2 x 5 us + 1 MB / 100 GB/s
    assert engine.end[0][1] == engine.end[1][1] == pytest.approx(20 + 10 + 10)


def test_comparison_timeline_has_measured_processes() -> None:
    first, second = node(1, 10), node(2, 5, (1,))
    first.start_time_micros, second.start_time_micros = 1000, 1012
    result = simulate([build_graph([first, second])], SimOptions(explain=False))
    events = chrome_trace(result, compare=True)["traceEvents"]
    pids = {e["args"]["name"]: e["pid"] for e in events if e["name"] == "process_name"}
    ops = [e for e in events if e["ph"] == "X" and e["cat"] == "op"]  # not the critical path
    measured = [e for e in ops if e["pid"] == pids["rank 0 (measured)"]]
    simulated = [e for e in ops if e["pid"] == pids["rank 0 (simulated)"]]
    assert [(e["ts"], e["dur"]) for e in measured] == [(0, 10), (12, 5)]
    assert [(e["ts"], e["dur"]) for e in simulated] == [(0, 10), (10, 5)]


def test_utilisation_bins_and_plot(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from chakra.views.busy import BINS, utilisation
    from chakra.views.plot import plot_utilisation

    # one op busy for the first half of the span: the first half of the bins are full
    bins = utilisation([0.0], [50.0], [0], 0.0, 100.0)
    assert len(bins) == BINS
    assert bins[: BINS // 2] == pytest.approx([1.0] * (BINS // 2))
    assert bins[BINS // 2 :] == pytest.approx([0.0] * (BINS // 2))
    result = simulate([build_graph([node(1, 10), node(2, 30, (1,), stream=7)])])
    out = tmp_path / "util.png"
    plot_utilisation(result, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
