"""Kahn's leftover set: the flat-array path (dense ids) and the dictionary path agree."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from chakra.convert.cycles import _leftover_sparse, break_cycles, leftover_after_kahn


@settings(max_examples=200, deadline=None)
@given(
    count=st.integers(1, 30),
    edges=st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29)), max_size=80),
    offset=st.sampled_from([0, 5, 10**6]),
)
def test_dense_and_sparse_paths_agree(count: int, edges: list, offset: int) -> None:
    ids = {offset + i for i in range(count)}
    deps: dict[int, list[int]] = {}
    for src, dst in edges:
        src, dst = offset + src % count, offset + dst % count
        if src != dst and src not in deps.get(dst, []):
            deps.setdefault(dst, []).append(src)
    leftover = leftover_after_kahn(deps, ids)
    assert leftover == _leftover_sparse(deps, ids)
    acyclic = {dst: list(srcs) for dst, srcs in deps.items()}
    break_cycles(acyclic, ids, {})
    assert leftover_after_kahn(acyclic, ids) == set()
    assert bool(leftover) == (acyclic != deps)  # edges removed only when there was a cycle
