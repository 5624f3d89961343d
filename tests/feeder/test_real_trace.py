"""The C++ feeder's own test scenarios on its test trace (reference §9.3), with the fixes."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra.et import NodeType
from chakra.feeder import EtFeeder, UnknownNodeError
from tests.feeder.graphs import drain


@pytest.fixture
def trace(shared_traces: Path) -> Path:
    return shared_traces / "chakra" / "feeder_trace.et.gz"


def test_first_issuable_nodes(trace: Path) -> None:
    with EtFeeder(trace) as feeder:
        first = feeder.get_next_issuable_node()
        second = feeder.get_next_issuable_node()
        assert first is not None and second is not None
        assert (first.id, second.id) == (216, 432)
        assert first.type == NodeType.COMP_NODE
        assert first.is_cpu_op is True
        assert first.get_other_attr("rf_id") == 2
        assert second.type == NodeType.COMM_COLL_NODE
        assert second.is_cpu_op is True
        assert second.get_other_attr("rf_id") == 110


def test_children_and_free(trace: Path) -> None:
    with EtFeeder(trace) as feeder:
        node = feeder.lookup_node(216)
        assert [child.id for child in node.children()][:3] == [217, 430, 435]
        assert feeder.get_next_issuable_node() is node
        feeder.free_children_nodes(216)
        feeder.remove_node(216)
        with pytest.raises(UnknownNodeError, match="216"):
            feeder.lookup_node(216)
        issued = [feeder.get_next_issuable_node().id for _ in range(2)]  # type: ignore[union-attr]
        assert 217 in issued and 216 not in issued


@pytest.mark.parametrize("window_size", [64, 1 << 20])
def test_whole_trace_issued_once(trace: Path, window_size: int) -> None:
    with EtFeeder(trace, window_size=window_size) as feeder:
        order = drain(feeder)
        assert feeder.unresolved_dependencies() == {}
    assert len(order) == len(set(order)) == 3664
