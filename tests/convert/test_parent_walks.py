"""The converter's walks of the op hierarchy end whatever the parents: a trace that reaches it
without the reader's checks (in memory) converts or is refused, never followed forever."""

from __future__ import annotations

import pytest

from chakra.convert import ConvertOptions, convert_et_plus
from chakra.errors import TraceFormatError
from chakra.ingest.et_plus_model import EtPlusNode, EtPlusTrace
from tests.fuzz.checks import answer_within

PROCESS = "[pytorch|profiler|execution_trace|process]"
ROOT = EtPlusNode(1, PROCESS, 1, ts=0, inclusive_dur=10)


def _op(node_id: int, parent: int, ts: float, **extra: object) -> EtPlusNode:
    return EtPlusNode(node_id, f"op{node_id}", parent, ts=ts, inclusive_dur=1.0, **extra)


@pytest.mark.parametrize(
    "nodes",
    [
        pytest.param([ROOT, _op(2, 3, 1), _op(3, 2, 2)], id="ctrl_deps-2-cycle"),
        pytest.param([ROOT, _op(2, 3, 1), _op(3, 4, 2), _op(4, 2, 3)], id="ctrl_deps-3-cycle"),
        pytest.param([ROOT, _op(2, 1, 1, ran_under=3), _op(3, 2, 2)], id="ran_under-2-cycle"),
    ],
)  # fmt: skip
def test_a_cycle_off_the_roots_converts(nodes: list[EtPlusNode]) -> None:
    trace = EtPlusTrace("mem.json", "1.1.1", 1, None, 0, 0, nodes, None)
    with answer_within(20):
        graph = convert_et_plus(trace, ConvertOptions())
    assert len(graph.nodes) >= len(nodes)


def test_a_cycle_through_a_root_is_refused() -> None:
    """A root (its ``ctrl_deps`` names itself) that ran under its own child."""
    root = EtPlusNode(1, PROCESS, 1, ts=0, inclusive_dur=10, ran_under=2)
    trace = EtPlusTrace("mem.json", "1.1.1", 1, None, 0, 0, [root, _op(2, 1, 1)], None)
    with answer_within(20), pytest.raises(TraceFormatError, match=r"^mem\.json: parent cycle"):
        convert_et_plus(trace, ConvertOptions())
