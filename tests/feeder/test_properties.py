"""Property: on random DAGs in random file orders and small windows, the typical loop issues
every node exactly once, and never before all its data dependencies were freed."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chakra.feeder import EtFeeder
from tests.feeder.graphs import write_deps


@st.composite
def dags(draw: st.DrawFn) -> tuple[dict[int, list[int]], int]:
    count = draw(st.integers(1, 30))
    ids = draw(st.permutations(range(count)))  # topological rank -> node id
    deps: dict[int, list[int]] = {}
    for rank, node_id in enumerate(ids):
        parents = draw(st.lists(st.integers(0, rank - 1), max_size=3)) if rank else []
        deps[node_id] = [ids[parent] for parent in parents]
    order = draw(st.permutations(list(deps)))  # file order, not necessarily topological
    window = draw(st.integers(1, 5))
    return {node_id: deps[node_id] for node_id in order}, window


@settings(max_examples=150, deadline=None)
@given(dags(), st.randoms(use_true_random=False))
@pytest.mark.slow
def test_issued_once_after_dependencies(case: tuple[dict[int, list[int]], int], rng) -> None:
    deps, window = case
    with tempfile.TemporaryDirectory() as folder:
        path = write_deps(Path(folder) / "g.et", deps)
        with EtFeeder(path, window_size=window) as feeder:
            freed: set[int] = set()
            issued: list[int] = []
            in_flight: list[int] = []
            while feeder.has_nodes_to_issue():
                node = feeder.get_next_issuable_node()
                if node is not None:
                    assert set(deps[node.id]) <= freed
                    issued.append(node.id)
                    in_flight.append(node.id)
                    if rng.random() < 0.5:
                        continue  # issue more before completing one
                assert in_flight, "stalled"
                done = in_flight.pop(rng.randrange(len(in_flight)))
                feeder.free_children_nodes(done)
                feeder.remove_node(done)
                freed.add(done)
            assert feeder.unresolved_dependencies() == {}
    assert sorted(issued) == sorted(deps)
