"""ctrl_deps kept only where they cannot close a cycle with data_deps: hand-made cases, and
for random DAGs with random parent edges, data_deps and the kept ctrl_deps together are
acyclic (checked with networkx, not our own sort)."""

from __future__ import annotations

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from chakra.convert.parents import backward_parents


def test_a_delay_whose_parent_is_the_op_it_delays_loses_it() -> None:
    # op 1 waits for its delay 2 (data); the delay naming 1 as parent would be a 2-cycle
    assert backward_parents([(2, 1)], {1: [2]}, [1, 2], {1: 10.0, 2: 8.0}) == {2}


def test_a_kernel_keeps_its_launching_op() -> None:
    # op 1 launches kernel 3 (parent 1); the kernel follows the op's launch call 2
    deps = {2: [1], 3: [2]}
    assert backward_parents([(3, 1)], deps, [1, 2, 3], {1: 0.0, 2: 1.0, 3: 5.0}) == set()


def test_an_op_replayed_on_its_last_segment_loses_it_for_children_before_it() -> None:
    # host comm op 5 stands for its last segment: its child 4 ran before, 5 depends on 4
    deps = {4: [3], 5: [4]}
    start = {3: 0.0, 4: 2.0, 5: 9.0}
    assert backward_parents([(4, 5)], deps, [3, 4, 5], start) == {4}


def test_unordered_nodes_follow_their_measured_start() -> None:
    # no data path between 1 and 2: the earlier start comes first, a later parent is dropped
    assert backward_parents([(2, 1)], {}, [1, 2], {1: 0.0, 2: 3.0}) == set()
    assert backward_parents([(2, 1)], {}, [1, 2], {1: 4.0, 2: 3.0}) == {2}


def test_sparse_ids_and_unknown_parents() -> None:
    big = 10**12
    assert backward_parents([(big, 7)], {big: [7]}, [7, big], {}) == set()
    assert backward_parents([(7, 99)], {}, [7], {}) == {7}  # 99 is no node


@st.composite
def dags_with_parents(draw: st.DrawFn) -> tuple[int, dict, list, dict]:
    count = draw(st.integers(2, 25))
    deps = {n: sorted(set(draw(st.lists(st.integers(0, n - 1), max_size=3)))) if n else []
            for n in range(count)}  # fmt: skip
    order = draw(st.permutations(range(count)))  # ids shuffled: edges not by id order
    deps = {order[n]: [order[d] for d in ds] for n, ds in deps.items()}
    parents = draw(st.lists(st.tuples(st.integers(0, count - 1), st.integers(0, count - 1)),
                            max_size=count))  # fmt: skip
    parents = list({c: p for c, p in parents if c != p}.items())
    start = {n: draw(st.floats(0, 100)) for n in range(count)}
    return count, deps, parents, start


@settings(max_examples=200, deadline=None)
@given(dags_with_parents())
def test_data_and_kept_ctrl_deps_are_acyclic_together(case: tuple) -> None:
    count, deps, parents, start = case
    left_out = backward_parents(parents, deps, range(count), start)
    data = nx.DiGraph()
    data.add_nodes_from(range(count))
    data.add_edges_from((d, n) for n, ds in deps.items() for d in ds)
    union = data.copy()
    union.add_edges_from((p, c) for c, p in parents if c not in left_out)
    assert nx.is_directed_acyclic_graph(union)
    # a parent that data deps already put before its child is never left out
    for child, parent in parents:
        if child in left_out:
            assert not nx.has_path(data, parent, child)
