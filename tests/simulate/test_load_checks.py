"""Loading a graph makes chakra_validate's checks (``--no-astra-sim``): a graph with
problems is refused in one line naming the file, the rank, the first problem and a count
per kind, the validator's own; a lenient load goes on with one warning saying what the
replay does about each kind. Both models (threads-streams, ASTRA-sim's) load this way."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Callable

import pytest

from chakra.et import GlobalMetadata, Node, NodeType, set_attr, write_et
from chakra.et.graph_checks import FEEDER_ATTR_KINDS, SIM_INT_ATTRS, validate_et, validate_nodes
from chakra.simulate import LoadOptions, SimulationError, build_graph, load_graph, simulate
from chakra.simulate.load_checks import SIM_CHECKS
from chakra.simulate.run import load_astra_graph, simulate_files

COMP = NodeType.COMP_NODE
LENIENT = LoadOptions(lenient=True)


def node(node_id: int, deps: tuple = (), ctrl: tuple = (), **attrs: Any) -> Any:
    """A host COMP node of 5 µs on thread 1; ``attrs`` in their conventional kinds."""
    out = Node(id=node_id, name=f"op{node_id}", type=COMP, duration_micros=5,
               data_deps=list(deps), ctrl_deps=list(ctrl))  # fmt: skip
    set_attr(out, "is_cpu_op", True)
    set_attr(out, "tid", 1)
    for name, value in attrs.items():
        set_attr(out, name, value)
    return out


def with_attr(out: Any, name: str, **value: Any) -> Any:
    out.attr.add(name=name, **value)
    return out


def typed(node_type: int) -> Any:
    out = node(2, deps=(1,))
    out.type = node_type
    return out


def huge_micros(**attrs: Any) -> Any:
    out = node(2, deps=(1,), **attrs)
    out.duration_micros = 2**63 // 1000 + 1  # 2^63 ns or more
    return out


#: One graph per kind of problem, each made of a clean node 1 and a faulty node 2 (or two).
CASES: dict[str, Callable[[], list[Any]]] = {
    "invalid_type": lambda: [node(1), typed(42)],
    "self_dep": lambda: [node(1), node(2, deps=(1, 2))],
    "self_ctrl_dep": lambda: [node(1), node(2, deps=(1,), ctrl=(2,))],
    "duration_micros": lambda: [node(1), huge_micros()],
    "duration_micros_beside_duration_ns": lambda: [node(1), huge_micros(duration_ns=3000)],
    "duration_ns": lambda: [node(1), node(2, deps=(1,), duration_ns=-5)],
    "stream_of_another_kind": lambda: [node(1), with_attr(node(2, deps=(1,)), "stream",
                                                          uint64_val=7)],
    "tid_not_an_integer": lambda: [node(1), with_attr(node(2, deps=(1,)), "tid",
                                                      string_val="x")],
    "is_cpu_op_of_another_kind": lambda: [node(1), with_attr(node(2, deps=(1,)), "is_cpu_op",
                                                             int64_val=1)],
    "dangling_data_dep": lambda: [node(1), node(2, deps=(1, 7))],
    "dangling_ctrl_dep": lambda: [node(1), node(2, deps=(1,), ctrl=(8,))],
    "ctrl_cycle": lambda: [node(1, ctrl=(2,)), node(2, deps=(1,))],
    "missing_attr": lambda: [node(1), typed(NodeType.MEM_LOAD_NODE)],  # no tensor_size
}  # fmt: skip
#: The kinds the validator reports for each case.
KINDS = {"invalid_type": {"invalid_type": 1}, "self_dep": {"self_dep": 1},
         "self_ctrl_dep": {"self_dep": 1}, "duration_micros": {"out_of_range": 1},
         "duration_micros_beside_duration_ns": {"out_of_range": 1},
         "duration_ns": {"out_of_range": 1}, "stream_of_another_kind": {"wrong_attr_kind": 1},
         "tid_not_an_integer": {"wrong_attr_kind": 1},
         "is_cpu_op_of_another_kind": {"wrong_attr_kind": 1},
         "dangling_data_dep": {"dangling_data_dep": 1},
         "dangling_ctrl_dep": {"dangling_ctrl_dep": 1}, "ctrl_cycle": {"cycle": 1},
         "missing_attr": {"missing_attr": 1}}  # fmt: skip


def write(path: Path, nodes: list[Any]) -> Path:
    write_et(path, GlobalMetadata(version="0.0.4"), nodes)
    return path


@pytest.mark.parametrize("case", list(CASES))
def test_a_problem_is_refused_with_the_validators_words(tmp_path: Path, case: str) -> None:
    path = write(tmp_path / f"{case}.et", CASES[case]())
    report = validate_et(path, SIM_CHECKS)
    assert report.counts() == KINDS[case]
    (kind,) = KINDS[case]
    for load in (load_graph, load_astra_graph):
        with pytest.raises(SimulationError) as raised:
            load(path, 0)
        message = str(raised.value)
        assert "\n" not in message
        assert message.startswith(f"{path}: rank 0: the graph fails chakra_validate's checks"
                                  f" (1 {kind}); first: {report.problems[0].message};")  # fmt: skip
        assert message.endswith("--lenient simulates it anyway")


@pytest.mark.parametrize("case", list(CASES))
def test_a_lenient_load_goes_on_with_one_warning(
    tmp_path: Path, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path / f"{case}.et", CASES[case]())
    with caplog.at_level(logging.WARNING, logger="chakra.simulate.load_checks"):
        graph = load_graph(path, 0, options=LENIENT)
    assert graph.problem_counts == KINDS[case]
    (record,) = [r for r in caplog.records if r.name == "chakra.simulate.load_checks"]
    assert record.getMessage().startswith(
        f"{path}: rank 0: simulating a graph that fails chakra_validate's checks (--lenient): "
    )
    assert " 1 " in record.getMessage()  # the count
    result = simulate([graph])
    assert result.ranks[0].simulated_makespan_us >= 5.0


def test_what_a_lenient_load_does(tmp_path: Path) -> None:
    """Deps on missing ids and on the node itself are left out; an out-of-range duration
    the replay needs is 0, one it does not read is ignored; a tid that is no integer is not
    read (the node waits for no thread)."""
    third, fourth = huge_micros(), huge_micros(duration_ns=3000)
    third.id, fourth.id, fourth.data_deps[:] = 3, 4, [2]
    nodes = [node(1), node(2, deps=(1, 2, 7)), third, fourth,
             with_attr(node(5, deps=(1,)), "tid", string_val="x")]  # fmt: skip
    path = write(tmp_path / "g.et", nodes)
    graph = load_graph(path, 0, options=LENIENT)
    assert (
        graph.problem_counts
        == dict(validate_et(path, SIM_CHECKS).counts())
        == {"dangling_data_dep": 1, "self_dep": 1, "out_of_range": 2, "wrong_attr_kind": 1}
    )
    preds = [list(graph.preds[graph.pred_start[i] : graph.pred_start[i + 1]]) for i in range(5)]
    assert preds == [[], [0], [0], [1], [0]]
    assert list(graph.duration_us) == [5.0, 5.0, 0.0, 3.0, 5.0]
    assert graph.resource[4] == -1


def test_a_repeated_id_is_refused_even_when_lenient(tmp_path: Path) -> None:
    path = write(tmp_path / "g.et", [node(1), node(2, deps=(1,)), node(1)])
    with pytest.raises(SimulationError, match="cannot be simulated even with --lenient"):
        load_graph(path, 0, options=LENIENT)


def test_a_data_cycle_loads_leniently_and_never_runs(tmp_path: Path) -> None:
    path = write(tmp_path / "g.et", [node(1, deps=(2,)), node(2, deps=(1,))])
    with pytest.raises(SimulationError, match="nodes never ran"):
        simulate_files([path], load=LENIENT)


def test_counts_and_first_problem_are_the_validators(tmp_path: Path) -> None:
    """Several kinds at once, in several nodes: the same counts, the same first problem."""
    nodes = [node(1, ctrl=(5,)), typed(0), node(3, deps=(3, 9), ctrl=(4,)), node(4, deps=(3,)),
             with_attr(node(5, deps=(4,)), "comm_size", string_val="8"),
             Node(id=6, name="bare", type=NodeType.COMM_COLL_NODE, data_deps=[5])]  # fmt: skip
    path = write(tmp_path / "g.et", nodes)
    report = validate_et(path, SIM_CHECKS)
    graph = load_graph(path, 0, options=LENIENT)
    assert graph.problem_counts == dict(report.counts())
    assert len(report.counts()) >= 6
    with pytest.raises(SimulationError, match=re.escape(f"first: {report.problems[0].message};")):
        load_graph(path, 0)


def test_checks_can_be_left_out(tmp_path: Path) -> None:
    path = write(tmp_path / "g.et", [node(1), node(2, deps=(1, 2))])
    graph = load_graph(path, 0, options=LoadOptions(checks=None))
    assert graph.problem_counts is None
    with pytest.raises(SimulationError, match="never ran"):
        simulate([graph])


@pytest.mark.parametrize("name", sorted({*FEEDER_ATTR_KINDS, *SIM_INT_ATTRS}))
def test_every_checked_attribute_of_every_kind(name: str) -> None:
    """The reader's shortcut (an ordinary node has no problem of its own) never hides one:
    on a COMP node, each attribute the validator checks, held in each kind and value that
    matters, gives the validator's counts."""
    values = [{"bool_val": True}, {"bool_val": False}, {"int64_val": 0}, {"int64_val": 7},
              {"int64_val": -7}, {"uint64_val": 7}, {"int32_val": 7}, {"sint64_val": -3},
              {"string_val": "7"}, {"double_val": 7.0}, {"bytes_val": b"7"}, {}]  # fmt: skip
    for value in values:
        for copies in (1, 2):
            nodes = [node(1), node(2, deps=(1,))]
            for _ in range(copies):
                nodes[1].attr.add(name=name, **value)
            expected = validate_nodes(nodes, SIM_CHECKS).counts()
            graph = build_graph(nodes, options=LENIENT)
            assert graph.problem_counts == dict(expected), (name, value, copies)


def test_the_reference_feeder_trace_is_refused(shared_traces: Path) -> None:
    """The reference's own chakra.0.et: 417 cycles, 383 self deps, 1,277 dangling ctrl
    deps and 28 missing attributes; it used to simulate to 333.7 ms without a word."""
    path = shared_traces / "chakra" / "feeder_trace.et.gz"
    with pytest.raises(SimulationError) as raised:
        load_graph(path, 0)
    assert (f"{path}: rank 0: the graph fails chakra_validate's checks (1,277 dangling_ctrl_dep,"
            " 383 self_dep, 417 cycle, 28 missing_attr)") in str(raised.value)  # fmt: skip
    graph = load_graph(path, 0, options=LENIENT)
    assert round(simulate([graph]).ranks[0].simulated_makespan_us) == 333_728
