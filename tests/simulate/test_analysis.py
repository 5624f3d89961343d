"""Critical path, what-if scaling and the reference-style log lines."""

from __future__ import annotations

import logging

import pytest

from chakra.errors import ChakraError
from chakra.simulate import Engine, build_graph, rank_results
from chakra.simulate.analysis import ScaleRule, critical_path, log_reference_lines, scale_durations
from tests.simulate.test_engine import node


def run(nodes: list) -> Engine:
    engine = Engine([build_graph(nodes)])
    engine.run()
    return engine


def graph_nodes() -> list:
    # cpu 1 (10) launches gemm 2 (50, stream 7) and nccl 3 (20, stream 8, collective);
    # cpu 4 (5) waits for the gemm
    return [node(1, 10), node(2, 50, (1,), stream=7), node(3, 20, (1,), stream=8, coll="0"),
            node(4, 5, (2,))]  # fmt: skip


def test_critical_path_follows_binding_constraints() -> None:
    engine = run(graph_nodes())
    assert critical_path(engine) == [("n2", 50.0), ("n1", 10.0), ("n4", 5.0)]


@pytest.mark.parametrize(("rule", "makespan"), [
    ("gpu=0.5", 40.0),        # 10 + 25 + 5
    ("compute=2", 130.0),     # gemm and cpu ops doubled: 20 + 100 + 10 (nccl is comm)
    ("comm=10", 210.0),       # the collective now dominates: 10 + 200
    ("n2=0", 30.0),           # name pattern: gemm takes 0; nccl ends at 30, cpu 4 at 15
])  # fmt: skip
def test_scale_rules(rule: str, makespan: float) -> None:
    engine = run(graph_nodes())
    assert rank_results(engine)[0].simulated_makespan_us == 65.0
    scale_durations(engine.graphs[0], [ScaleRule.parse(rule)])
    scaled = Engine(engine.graphs)
    scaled.run()
    assert rank_results(scaled)[0].simulated_makespan_us == makespan


def test_bad_scale_rule() -> None:
    for text in ("gpu", "=2", "gpu=-1", "gpu=fast"):
        with pytest.raises(ChakraError, match="expected TARGET=FACTOR"):
            ScaleRule.parse(text)


def test_reference_log_lines(caplog: pytest.LogCaptureFixture) -> None:
    engine = run(graph_nodes())
    with caplog.at_level(logging.DEBUG, logger="chakra.simulate.trace"):
        log_reference_lines(engine)
    lines = [record.getMessage() for record in caplog.records]
    assert "Issuing CPU Node ID 1 (n1) at 0us with duration 10us, tid: 1" in lines
    assert "GPU Node ID 2 on stream 7 completed at 60us, tid: stream 7" in lines
    assert len(lines) == 8
