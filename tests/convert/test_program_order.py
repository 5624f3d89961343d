"""Children of a host op in the order the thread ran them, untimed ones placed by the timed
work they contain or by their neighbours (never all first)."""

from __future__ import annotations

from chakra.convert.et_plus_input import EtPlusNode
from chakra.convert.graph import first_starts, outlives_parent, program_order


def node(node_id: int, parent: int, ts: float | None = None, dur: float | None = None):
    return EtPlusNode(id=node_id, name=f"op{node_id}", ctrl_deps=parent, ts=ts, inclusive_dur=dur)


def test_untimed_child_takes_the_place_of_its_timed_descendant() -> None:
    # parent 1 (unmatched): child 2 untimed holding optimizer op 3 measured at +12,900 us;
    # child 4 "zero_grad" measured at 0 us; child 5 untimed, nothing timed inside, after 4
    zero_grad, untimed_outer, optimizer, trailing = (
        node(4, 1, 0.0, 10.0),
        node(2, 1),
        node(3, 2, 12_900.0, 5.0),
        node(5, 1),
    )
    children = {1: [untimed_outer, zero_grad, trailing], 2: [optimizer]}
    first = first_starts([node(1, 1), untimed_outer, optimizer, zero_grad, trailing], children)
    assert first == {1: 0.0, 2: 12_900.0, 3: 12_900.0, 4: 0.0, 5: None}
    ordered = program_order(children[1], first)
    assert [n.id for n in ordered] == [4, 5, 2]


def test_untimed_children_without_timing_keep_id_order_among_timed() -> None:
    kids = [node(10, 1, 50.0, 1.0), node(11, 1), node(12, 1, 20.0, 1.0), node(13, 1)]
    first = first_starts(kids, {})
    # 12 ran first (20 us); 13 follows 12 by id; 10 (50 us) then 11 after it
    assert [n.id for n in program_order(kids, first)] == [12, 13, 10, 11]


def test_an_op_closed_after_its_parent_returned_is_detached() -> None:
    parent = node(1, 1, 100.0, 40.0)
    assert outlives_parent(node(2, 1, 110.0, 3_000.0), parent)
    assert not outlives_parent(node(3, 1, 110.0, 30.0), parent)
    assert not outlives_parent(node(4, 1, 110.0, 30.5), parent)  # within the clock's resolution
