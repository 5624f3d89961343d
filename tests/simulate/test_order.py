"""The take order is computed once per graph structure: copies of a graph with other
durations (a what-if's, the slack runs') share it, a graph with other measured starts or
dependencies does not, and the memo goes with the graphs."""

from __future__ import annotations

import gc
from array import array

import msgspec

from chakra.simulate import build_graph
from chakra.simulate.order import _TAKEN, take_order
from tests.simulate.test_engine import node


def _graph() -> object:
    nodes = [node(1, 10), node(2, 5, (1,)), node(3, 7, (1,), stream=7), node(4, 2, (2, 3))]
    for item, start in zip(nodes, (0, 10, 12, 19)):
        item.start_time_micros = start
    return build_graph(nodes, 0)


def test_copies_with_other_durations_share_the_order_and_others_do_not() -> None:
    graph = _graph()
    first = take_order(graph)
    faster = msgspec.structs.replace(graph, duration_us=array("d", [1.0] * 4))
    assert take_order(faster) is first
    assert not first.flags.writeable  # shared: nobody may change it
    # measured starts that put node 3 before node 2: another order, computed again
    swapped = msgspec.structs.replace(graph, measured_start_us=array("d", [0, 12, 10, 19]))
    order = take_order(swapped)
    assert order is not first and order.tolist() == [0, 2, 1, 3]
    assert first.tolist() == [0, 1, 2, 3]
    fresh = _graph()  # the same nodes, built again: other arrays, computed again
    assert take_order(fresh) is not first and take_order(fresh).tolist() == first.tolist()


def test_the_memo_goes_with_the_graphs() -> None:
    gc.collect()
    before = len(_TAKEN)
    graph = _graph()
    take_order(graph)
    assert len(_TAKEN) == before + 1
    del graph
    gc.collect()
    assert len(_TAKEN) == before
