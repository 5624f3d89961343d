"""ET validator: each rule on hand-made graphs, acyclicity properties, scale, real traces."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chakra.et import (
    CollectiveCommType,
    GlobalMetadata,
    Node,
    NodeType,
    find_attr,
    get_bool_attr,
    read_et,
    set_attr,
    write_et,
)
from chakra.et.graph_checks import (
    PROBLEM_KINDS,
    Problem,
    ValidationOptions,
    ValidationReport,
    validate_et,
    validate_nodes,
)

COMP, COLL = NodeType.COMP_NODE, NodeType.COMM_COLL_NODE


def make_node(
    node_id: int,
    node_type: int = COMP,
    deps: Sequence[int] = (),
    ctrl: Sequence[int] = (),
    name: str = "",
    **attrs: Any,
) -> Any:
    """A node with ``is_cpu_op`` (default True) and ``attrs`` in their conventional kinds."""
    node = Node(id=node_id, name=name or f"op{node_id}", type=node_type)
    node.data_deps.extend(deps)
    node.ctrl_deps.extend(ctrl)
    if node_type != NodeType.METADATA_NODE:
        set_attr(node, "is_cpu_op", attrs.pop("is_cpu_op", True))
    for attr_name, value in attrs.items():
        set_attr(node, attr_name, value)
    return node


def clean_graph() -> list[Any]:
    """Every node type with the attributes the feeder reads; deps and ctrl deps resolve,
    one of them forward (node 2 names node 9, which comes later)."""
    return [
        make_node(0, NodeType.METADATA_NODE, name="meta"),
        make_node(1, NodeType.MEM_LOAD_NODE, tensor_size=64),
        make_node(2, COMP, deps=[1, 9], ctrl=[0], is_cpu_op=False, stream=7, num_ops=3),
        make_node(
            3,
            COLL,
            deps=[2],
            comm_type=CollectiveCommType.ALL_REDUCE,
            comm_size=1024,
            pg_name="0",
            comm_priority=1,
            is_cpu_op=False,
            stream=7,
        ),
        make_node(4, NodeType.COMM_SEND_NODE, deps=[3], comm_size=8, comm_dst=1, comm_tag=5),
        make_node(5, NodeType.COMM_RECV_NODE, deps=[3], comm_size=8, comm_src=1, comm_tag=5),
        make_node(6, NodeType.MEM_STORE_NODE, deps=[4, 5], tensor_size=64),
        make_node(9, COMP, ctrl=[0]),
    ]


def problems_of(nodes: Sequence[Any], **options: bool) -> list[Problem]:
    """The Chakra rules (ASTRA-sim's own requirements: tests/et/test_astra_sim.py)."""
    options.setdefault("astra_sim", False)
    return list(validate_nodes(nodes, ValidationOptions(**options)).problems)


def only(problems: list[Problem], kind: str) -> Problem:
    assert [p.kind for p in problems] == [kind], problems
    return problems[0]


def assert_real_cycle(nodes: Sequence[Any], ids: Sequence[int]) -> None:
    """Each id lists the next among its data_deps, the last the first; no id repeats."""
    deps = {node.id: set(node.data_deps) for node in nodes}
    assert len(ids) >= 2 and len(set(ids)) == len(ids)
    for here, after in zip(ids, [*ids[1:], ids[0]]):
        assert after in deps[here], (here, after)


def test_clean_graph_passes() -> None:
    options = ValidationOptions(require_streams=True, astra_sim=False)
    report = validate_nodes(clean_graph(), options)
    assert report == ValidationReport(nodes=8, problems=())
    assert report.ok and report.counts() == {}
    # what the shipped ASTRA-sim cannot run: the METADATA node, group "0"
    report = validate_nodes(clean_graph(), ValidationOptions(require_streams=True))
    assert [(p.kind, p.node_id) for p in report.problems] == [
        ("astra_sim_unsupported", 0), ("invalid_pg_name", 3)]  # fmt: skip


def test_empty_graph_passes() -> None:
    assert validate_nodes([]).ok


def test_duplicate_id() -> None:
    nodes = [make_node(1), make_node(2), make_node(1, name="again")]
    problem = only(problems_of(nodes), "duplicate_id")
    assert problem.node_id == 1
    assert problem.message == "node 1 ('again'), node #3 of the stream, reuses the id of node #1"


def test_dangling_data_and_ctrl_deps() -> None:
    nodes = [make_node(1, deps=[7], ctrl=[8]), make_node(2, deps=[1], ctrl=[1])]
    problems = problems_of(nodes)
    assert [(p.kind, p.node_id, p.related_ids) for p in problems] == [
        ("dangling_data_dep", 1, (7,)),
        ("dangling_ctrl_dep", 1, (8,)),
    ]
    assert problems[0].message == "node 1 ('op1') has data dep 7, which no node has"
    assert problems[1].message == "node 1 ('op1') has ctrl dep 8, which no node has"
    only(problems_of(nodes, check_ctrl_deps=False), "dangling_data_dep")


def test_self_dep_is_not_also_a_cycle() -> None:
    problem = only(problems_of([make_node(1), make_node(2, deps=[1, 2])]), "self_dep")
    assert problem.message == "node 2 ('op2') lists itself among its data_deps"


def test_cycle_names_a_node_and_lists_a_real_cycle() -> None:
    # 1 <- 2 <- 3 <- 1 (forward dep of node 1 on 3), plus 4 hanging below the cycle.
    nodes = [
        make_node(1, deps=[3]),
        make_node(2, deps=[1]),
        make_node(3, deps=[2]),
        make_node(4, deps=[3]),
    ]
    problem = only(problems_of(nodes), "cycle")
    assert problem.related_ids == (1, 3, 2)
    assert_real_cycle(nodes, problem.related_ids)
    assert problem.message == (
        "node 1 ('op1') is on a dependency cycle 1 -> 3 -> 2 -> 1 (each lists the next among"
        " its data_deps or ctrl_deps, both of which ASTRA-sim waits on), in a strongly"
        " connected region of 3 nodes"
    )


def test_each_strongly_connected_region_is_reported_once() -> None:
    # Two 2-cycles joined by an edge (one region each), and a 4-node region with two cycles.
    nodes = [
        make_node(1, deps=[2]),
        make_node(2, deps=[1]),
        make_node(3, deps=[4, 1]),
        make_node(4, deps=[3]),
        make_node(5, deps=[6, 8]),
        make_node(6, deps=[5, 7]),
        make_node(7, deps=[5]),
        make_node(8, deps=[6]),
    ]
    problems = problems_of(nodes)
    assert [p.kind for p in problems] == ["cycle"] * 3
    regions = sorted(int(re.search(r"region of (\d+)", p.message)[1]) for p in problems)
    assert regions == [2, 2, 4]
    for problem in problems:
        assert_real_cycle(nodes, problem.related_ids)


def test_cycle_through_a_duplicate_id_is_found() -> None:
    # No forward dep: the cycle 1 <-> 2 exists only because id 1 appears twice.
    nodes = [make_node(1), make_node(2, deps=[1]), make_node(1, deps=[2], name="dup")]
    problems = problems_of(nodes)
    assert [p.kind for p in problems] == ["duplicate_id", "cycle"]
    assert problems[1].message.startswith("node 1 ('dup') is on a dependency cycle 1 -> 2 -> 1")


@pytest.mark.parametrize("node_type", [0, 8, 42])
def test_invalid_type(node_type: int) -> None:
    problem = only(problems_of([make_node(1, node_type)]), "invalid_type")
    assert problem.message == f"node 1 ('op1') has type {node_type}, not a valid NodeType"


@pytest.mark.parametrize(
    ("node_type", "missing"),
    [
        (COMP, []),  # is_cpu_op is optional: absent, the feeder reads false (a GPU node)
        (COLL, ["comm_type", "comm_size"]),
        (NodeType.COMM_SEND_NODE, ["comm_size"]),
        (NodeType.COMM_RECV_NODE, ["comm_size"]),
        (NodeType.MEM_LOAD_NODE, ["tensor_size"]),
        (NodeType.MEM_STORE_NODE, ["tensor_size"]),
        (NodeType.METADATA_NODE, []),
    ],
)
def test_missing_attr(node_type: int, missing: list[str]) -> None:
    problems = problems_of([Node(id=5, name="x", type=node_type)])
    assert [p.kind for p in problems] == ["missing_attr"] * len(missing)
    type_name = NodeType(node_type).name
    assert [p.message for p in problems] == [
        f"node 5 ('x') of type {type_name} has no {name} attribute" for name in missing
    ]


def test_comm_size_as_uint64_as_r126_wrote_it_is_the_wrong_kind() -> None:
    node = make_node(1, COLL, comm_type=0)
    set_attr(node, "comm_size", 1 << 20, kind="uint64_val")
    problem = only(problems_of([node]), "wrong_attr_kind")
    assert problem.message == (
        "node 1 ('op1') holds comm_size as uint64_val, but the feeder reads only int64_val"
    )


@pytest.mark.parametrize(
    ("name", "value", "kind"),
    [
        ("is_cpu_op", 1, "int64_val"),
        ("tensor_size", 64, "int64_val"),
        ("comm_type", 0, "int32_val"),
        ("comm_src", 1, "int64_val"),
        ("comm_priority", 1, "uint32_val"),
        ("pg_name", "0", "bytes_val"),
        ("stream", 7, "int32_val"),
        ("num_ops", 7, "uint64_val"),
    ],
)
def test_wrong_attr_kind_optional_or_required(name: str, value: Any, kind: str) -> None:
    node = make_node(1, NodeType.MEM_LOAD_NODE, tensor_size=64)
    set_attr(node, name, value.encode() if kind == "bytes_val" else value, kind=kind)
    problem = only(problems_of([node]), "wrong_attr_kind")
    assert f"holds {name} as {kind}, but the feeder reads only " in problem.message


def test_attr_with_no_value_and_unknown_attrs() -> None:
    node = make_node(1, seq_id=3)
    node.attr.add(name="comm_tag")  # no oneof member set
    set_attr(node, "my_attr", 1, kind="uint64_val")  # not read by the feeder: not checked
    problem = only(problems_of([node]), "wrong_attr_kind")
    assert problem.message.endswith(
        "holds comm_tag as no value, but the feeder reads only int32_val"
    )


@pytest.mark.parametrize("comm_type", [-1, 10, 1 << 40])
def test_invalid_comm_type(comm_type: int) -> None:
    problem = only(
        problems_of([make_node(1, COLL, comm_type=comm_type, comm_size=0)]), "invalid_comm_type"
    )
    assert problem.message == f"node 1 ('op1') has comm_type {comm_type}, not a CollectiveCommType"


def test_negative_comm_size() -> None:
    nodes = [make_node(1, NodeType.COMM_SEND_NODE, comm_size=-8)]
    problem = only(problems_of(nodes), "invalid_attr_value")
    assert problem.message == "node 1 ('op1') has a negative comm_size -8"


def test_missing_stream_only_with_require_streams_and_only_on_gpu_nodes() -> None:
    nodes = [
        make_node(1, is_cpu_op=False),  # GPU COMP: needs a stream
        make_node(2, COLL, comm_type=0, comm_size=4, is_cpu_op=False),  # GPU COLL
        make_node(3, COMP, is_cpu_op=True),  # CPU op
        make_node(4, NodeType.MEM_LOAD_NODE, tensor_size=1, is_cpu_op=False),  # not COMP/COMM
        make_node(5, is_cpu_op=False, stream=3),
    ]
    assert problems_of(nodes) == []
    problems = problems_of(nodes, require_streams=True)
    assert [(p.kind, p.node_id) for p in problems] == [("missing_stream", 1), ("missing_stream", 2)]
    assert problems[0].message == "node 1 ('op1') runs on the GPU but has no stream attribute"


def test_report_counts_and_kinds() -> None:
    nodes = [make_node(1, deps=[5, 6]), make_node(1), Node(id=2, type=NodeType.MEM_LOAD_NODE)]
    report = validate_nodes(nodes)
    assert not report.ok and report.nodes == 3
    assert report.counts() == {"duplicate_id": 1, "missing_attr": 1, "dangling_data_dep": 2}
    assert {p.kind for p in report.problems} <= set(PROBLEM_KINDS)


@st.composite
def dags(draw: st.DrawFn) -> list[Any]:
    """Random DAGs: distinct random ids, data deps only from lower to higher index."""
    ids = draw(
        st.lists(st.integers(0, 2**63 - 2), min_size=1, max_size=25, unique=True)
    )  # ids < 2^63, one left
    nodes = []
    for index, node_id in enumerate(ids):
        parents = draw(st.lists(st.integers(0, index - 1), max_size=4)) if index else []
        nodes.append(make_node(node_id, deps=[ids[p] for p in parents]))
    return nodes


def descendants(nodes: Sequence[Any], start: int) -> list[int]:
    """Indexes of nodes that depend, directly or not, on ``nodes[start]`` (iterative)."""
    index_of = {node.id: i for i, node in enumerate(nodes)}
    below = [False] * len(nodes)
    for i in range(start + 1, len(nodes)):
        below[i] = any(index_of[d] == start or below[index_of[d]] for d in nodes[i].data_deps)
    return [i for i in range(len(nodes)) if below[i]]


@settings(max_examples=150, deadline=None)
@given(dags())
def test_random_dags_pass(nodes: list[Any]) -> None:
    assert validate_nodes(nodes).ok


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_one_back_edge_along_a_path_gives_one_real_cycle(data: st.DataObject) -> None:
    nodes = data.draw(dags())
    pairs = [(top, low) for top in range(len(nodes)) for low in descendants(nodes, top)]
    if not pairs:
        nodes = [*nodes, make_node(max(n.id for n in nodes) + 1, deps=[nodes[-1].id])]
        pairs = [(len(nodes) - 2, len(nodes) - 1)]
    top, low = data.draw(st.sampled_from(pairs))
    nodes[top].data_deps.append(nodes[low].id)  # top now depends on one of its descendants
    problem = only(problems_of(nodes), "cycle")
    assert_real_cycle(nodes, problem.related_ids)
    assert problem.node_id == problem.related_ids[0]
    shown = " -> ".join(str(i) for i in problem.related_ids[:10])
    assert f"cycle {shown} -> " in problem.message


def chain(count: int) -> Iterator[Any]:
    """Nodes 0..count-1, each depending on the previous one, built one at a time."""
    for node_id in range(count):
        node = Node(id=node_id, name="op", type=COMP)
        if node_id:
            node.data_deps.append(node_id - 1)
        node.attr.add(name="is_cpu_op", bool_val=True)
        yield node


@pytest.mark.slow
def test_long_ring_without_recursion() -> None:
    count = 100_000  # far beyond the recursion limit; the ring closes on node 0
    nodes = list(chain(count))
    nodes[0].data_deps.append(count - 1)
    problem = only(problems_of(nodes), "cycle")
    assert problem.related_ids == (0, *range(count - 1, 0, -1))
    assert f"-> ... ({count} ids in all) -> 0 " in problem.message


@pytest.mark.slow
def test_million_node_chain() -> None:
    """No step recurses: a chain a million deep is checked (its speed: benchmarks/)."""
    report = validate_nodes(chain(1_000_000))
    assert report == ValidationReport(nodes=1_000_000, problems=())


def test_validate_et_streams_a_file(tmp_path: Path) -> None:
    path = tmp_path / "g.et"
    write_et(path, GlobalMetadata(version="1"), [*clean_graph(), make_node(10, deps=[11])])
    report = validate_et(path, ValidationOptions(astra_sim=False))
    assert report.nodes == 9
    assert [(p.kind, p.node_id) for p in report.problems] == [("dangling_data_dep", 10)]


def test_astra_sim_trace_passes(shared_traces: Path) -> None:
    report = validate_et(shared_traces / "astra-sim" / "all_reduce.0.et")
    assert report == ValidationReport(nodes=1, problems=())


def test_feeder_trace_from_an_old_converter(shared_traces: Path) -> None:
    """The feeder's test trace (3,664 nodes: 3,643 COMP, 21 COLL) is sound as a data-dep
    graph (unique ids, every data dep resolves, acyclic) but: 14 COLL nodes, the CPU-side
    ``c10d::broadcast_``/``c10d::allreduce_`` ops, have neither ``comm_type`` nor
    ``comm_size`` (only the 7 ``ncclKernel_*`` COLL nodes do), so 28 ``missing_attr``;
    1,277 ctrl deps name absent nodes (851 of them id 3, 161 id 3198); no node has a
    ``stream``, so the 1,216 GPU nodes (1,209 COMP + 7 COLL) lack one. ASTRA-sim waits on
    ``ctrl_deps`` too: 383 nodes list themselves there and 417 regions form cycles over
    both kinds, so its nodes behind them are never issued. Counts below are cross-checked
    against a direct reading of the file (the regions with networkx)."""
    path = shared_traces / "chakra" / "feeder_trace.et.gz"
    report = validate_et(path, ValidationOptions(require_streams=True, astra_sim=False))
    assert report.nodes == 3664
    assert report.counts() == {
        "missing_attr": 28,
        "dangling_ctrl_dep": 1277,
        "missing_stream": 1216,
        "self_dep": 383,
        "cycle": 417,
    }
    _, nodes = read_et(path)
    ids = {node.id for node in nodes}
    colls = [node for node in nodes if node.type == COLL]
    bare = [node for node in colls if find_attr(node, "comm_size") is None]
    assert len(bare) == 14 and all(node.name.startswith("c10d::") for node in bare)
    assert all(find_attr(node, "comm_type") is None for node in bare)
    missing = {
        (p.node_id, p.message.split()[-2]) for p in report.problems if p.kind == "missing_attr"
    }
    assert missing == {(node.id, name) for node in bare for name in ("comm_type", "comm_size")}
    assert sum(dep not in ids for node in nodes for dep in node.ctrl_deps) == 1277
    gpu = [node for node in nodes if not get_bool_attr(node, "is_cpu_op")]
    assert len(gpu) == 1216 and all(find_attr(node, "stream") is None for node in nodes)
    assert sum(node.id in node.ctrl_deps for node in nodes) == 383
    graph = nx.DiGraph()
    graph.add_edges_from((dep, node.id) for node in nodes
                         for dep in [*node.data_deps, *node.ctrl_deps]
                         if dep in ids and dep != node.id)  # fmt: skip
    assert sum(len(c) > 1 for c in nx.strongly_connected_components(graph)) == 417
    assert validate_et(path, ValidationOptions(check_ctrl_deps=False, astra_sim=False)).counts(
    ) == {"missing_attr": 28, "self_dep": 383, "cycle": 417}  # fmt: skip


def test_duration_ns_without_a_value_is_no_problem() -> None:
    """An attribute holding no value is absent for every reader (the validator raised a
    TypeError on a ``duration_ns`` of no value)."""
    node = make_node(1)
    node.attr.add(name="duration_ns")
    assert problems_of([node]) == []
