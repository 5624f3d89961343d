"""What chakra_sim refuses when it reads a graph (ids of 2^63 and more, durations negative,
not finite or of 2^63 ns and more, integer attributes of another kind), and that its errors
name the file; chakra_validate reports the same graphs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chakra.et import GlobalMetadata, Node, NodeType, set_attr
from chakra.et.graph_checks import validate_et
from chakra.et.writer import write_et
from chakra.simulate import LoadOptions, SimulationError, build_graph
from chakra.simulate.astra_graph import build_astra_graph
from chakra.simulate.run import simulate_files


def node(node_id: int, **attrs: Any) -> Any:
    out = Node(id=node_id, name=f"op{node_id}", type=NodeType.COMP_NODE, duration_micros=1)
    set_attr(out, "is_cpu_op", True)
    set_attr(out, "tid", 1)
    for name, value in attrs.items():
        kind = {str: "string_val", bool: "bool_val", float: "double_val", list: "int64_list"}
        set_attr(out, name, value, kind.get(type(value), "int64_val"))
    return out


def test_id_of_2_63_is_refused_naming_the_node() -> None:
    for build in (build_graph, build_astra_graph):
        with pytest.raises(SimulationError, match=r"node 9223372036854775808 .*2\^63"):
            build([node(1), node(2**63)], 0)


@pytest.mark.parametrize("value", [-5, "abc", [1, 2], 1.5])
def test_duration_ns_must_be_a_nonnegative_integer(value: Any) -> None:
    with pytest.raises(SimulationError, match=r"node 2 \(op2\)"):
        build_graph([node(1), node(2, duration_ns=value)])


@pytest.mark.parametrize("value", ["abc", [1, 2], True])
def test_tid_must_be_an_integer(value: Any) -> None:
    with pytest.raises(SimulationError, match=r"node 2 \(op2\): attribute tid holds"):
        build_graph([node(1), node(2, tid=value)])


def test_huge_duration_micros_is_refused() -> None:
    huge = node(1)
    huge.duration_micros = 2**64 - 1
    for build in (build_graph, build_astra_graph):
        with pytest.raises(SimulationError, match="2\\^63 ns"):
            build([huge], 0)


def _write(path: Path, nodes: list[Any]) -> Path:
    write_et(path, GlobalMetadata(version="0.0.4"), nodes)
    return path


@pytest.mark.parametrize(
    "bad",
    [node(2**63), node(2, duration_ns=-1000), node(2, tid="abc"), node(2, duration_ns=1.5)],
)
def test_validate_and_sim_agree(tmp_path: Path, bad: Any) -> None:
    path = _write(tmp_path / "bad.et", [node(1), bad])
    assert not validate_et(path).ok
    with pytest.raises(SimulationError, match=str(path)):
        simulate_files([path])


def test_nodes_that_never_ran_name_the_file(tmp_path: Path) -> None:
    """A cycle is refused when loaded; loaded leniently, the replay's own error names the
    file too."""
    first, second = node(1), node(2)
    first.data_deps.append(2)
    second.data_deps.append(1)
    path = _write(tmp_path / "cycle.et", [first, second])
    with pytest.raises(SimulationError, match=f"{path}: rank 0: .* \\(1 cycle\\)"):
        simulate_files([path])
    with pytest.raises(SimulationError, match=f"{path}: rank 0: 2 nodes never ran"):
        simulate_files([path], load=LoadOptions(lenient=True))
