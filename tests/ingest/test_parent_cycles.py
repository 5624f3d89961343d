"""Parent cycles of a host ET: found in linear time, refused with the nodes named; roots that
name themselves (PyTorch's process root) are no cycle."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import pytest

from chakra.errors import TraceFormatError
from chakra.ingest import load_host_trace
from chakra.ingest.parent_cycles import describe_cycle, parent_cycle

PROCESS = "[pytorch|profiler|execution_trace|process]"
THREAD = "[pytorch|profiler|execution_trace|thread]"


def _cycle(parents: dict[int, Optional[int]]) -> list[int]:
    """parent_cycle over ``parents`` (node -> parent), starting everywhere."""
    return parent_cycle(parents, lambda n: parents[n] if parents[n] in parents else None)


@pytest.mark.parametrize(
    ("parents", "expected"),
    [
        ({1: None, 2: 1, 3: 2}, []),
        ({1: 9, 2: 1}, []),  # a parent that is no node: a root
        ({1: None, 5: 5}, [5, 5]),
        ({1: None, 5: 7, 7: 5}, [5, 7, 5]),
        ({1: None, 5: 7, 7: 9, 9: 5, 10: 9}, [5, 7, 9, 5]),
        ({1: None, 2: 3, 3: 4, 4: 3}, [3, 4, 3]),  # reached from a node outside the cycle
    ],
)  # fmt: skip
def test_parent_cycle(parents: dict[int, Optional[int]], expected: list[int]) -> None:
    assert _cycle(parents) == expected


def test_a_long_cycle_is_described_by_its_first_nodes_and_size() -> None:
    assert describe_cycle([5, 7, 5]) == "5 -> 7 -> 5"
    assert describe_cycle([*range(1, 41), 1]) == "1 -> 2 -> 3 -> 4 -> 5 -> 6 -> 7 -> ... (40 nodes)"


def _host_et(path: Path, parents: dict[int, int], names: dict[int, str] = {}) -> Path:  # noqa: B006
    nodes = [{"id": i, "name": names.get(i, f"op{i}"), "ctrl_deps": p, "inputs": {},
              "outputs": {}, "attrs": []} for i, p in parents.items()]  # fmt: skip
    path.write_text(json.dumps({"schema": "1.1.1-chakra.0.0.4", "nodes": nodes}))
    return path


@pytest.mark.parametrize(
    ("parents", "shown"),
    [
        ({1: 1, 2: 1, 5: 5}, "5 -> 5"),
        ({1: 1, 2: 1, 5: 7, 7: 5}, "5 -> 7 -> 5"),
        ({1: 1, 2: 1, 5: 9, 7: 5, 9: 7}, "5 -> 9 -> 7 -> 5"),
    ],
)  # fmt: skip
def test_host_et_with_a_parent_cycle_is_refused(tmp_path: Path, parents: dict, shown: str) -> None:
    path = _host_et(tmp_path / "h.json", parents, {1: PROCESS, 2: THREAD})
    with pytest.raises(TraceFormatError, match=f"parent cycle through nodes {shown}$") as info:
        load_host_trace(path)
    assert info.value.path == str(path)


def test_roots_may_name_themselves(tmp_path: Path) -> None:
    """PyTorch's process root names itself (every host ET of /work/shared/traces and
    tests/data does); so may a thread root; an op parented by id 0 (no node) is a root."""
    path = _host_et(tmp_path / "h.json", {1: 1, 2: 1, 3: 3, 4: 2, 5: 0},
                    {1: PROCESS, 3: THREAD})  # fmt: skip
    assert len(load_host_trace(path).ops) == 5


def test_an_op_naming_itself_is_a_cycle_even_as_the_only_root(tmp_path: Path) -> None:
    path = _host_et(tmp_path / "h.json", {1: 1, 2: 1})
    with pytest.raises(TraceFormatError, match="parent cycle through nodes 1 -> 1"):
        load_host_trace(path)


def test_the_worst_cases_walk_every_node_once() -> None:
    """A chain whose parents all have larger ids (no cycle), and one cycle of all nodes."""
    size = 100_000
    chain = [*range(1, size), None]
    ring = [*range(1, size), 0]
    assert parent_cycle(range(size), chain.__getitem__) == []
    assert parent_cycle(range(size), ring.__getitem__) == [*range(size), 0]


def test_linear_time() -> None:
    """10x the nodes take about 10x the time (under 30x: quadratic would be 100x)."""

    def best(size: int) -> float:
        ring = [*range(1, size), 0]
        times = []
        for _ in range(3):
            start = time.perf_counter()
            parent_cycle(range(size), ring.__getitem__)
            times.append(time.perf_counter() - start)
        return min(times)

    assert best(200_000) < 30 * max(best(20_000), 1e-4)
