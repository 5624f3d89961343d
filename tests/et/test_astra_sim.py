"""What the shipped ASTRA-sim cannot run, as chakra_validate reports it: each rule on a
hand-made graph, the cycle over data_deps and ctrl_deps together, and the CLI naming the
nodes. Each rule's facts are those of ../shared/tools/astra-sim/README.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from chakra.et import CollectiveCommType, GlobalMetadata, Node, NodeType, set_attr, write_et
from chakra.et.astra_sim import is_group_id
from chakra.et.graph_checks import ValidationOptions, validate_et, validate_nodes
from tests.et.custom_collective import write_ring_allreduce
from tests.et.test_validate import COLL, COMP, make_node

SEND, RECV = NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE


def kinds(nodes: list, **options: object) -> list[tuple[str, int]]:
    report = validate_nodes(nodes, ValidationOptions(**options))  # type: ignore[arg-type]
    return [(p.kind, p.node_id) for p in report.problems]


def collective(node_id: int, pg_name: str = "1", comm_type: int = 0) -> object:
    return make_node(node_id, COLL, comm_type=comm_type, comm_size=64, pg_name=pg_name,
                     is_cpu_op=False, stream=7)  # fmt: skip


@pytest.mark.parametrize(
    ("name", "ok"),
    [("1", True), ("42", True), ("2147483647", True), ("0", False), ("2147483648", False),
     ("-1", False), (" 1", False), ("1a", False), ("0x7f3a2c10d740", False),
     ("140737488355328", False), ("default_pg", False), ("", False), ("\u0661", False)],
)  # fmt: skip
def test_group_ids_are_what_stoi_reads_and_above_zero(name: str, ok: bool) -> None:
    assert is_group_id(name) is ok
    problems = kinds([collective(1, pg_name=name)])
    assert problems == ([] if ok else [("invalid_pg_name", 1)])


def test_a_two_node_cycle_over_data_and_ctrl_deps_is_named() -> None:
    """The converter's old ``[delay]`` node: the op lists it in data_deps, it lists the op
    in ctrl_deps. Neither kind alone has a cycle; ASTRA-sim waits on both."""
    op = make_node(1, COMP, deps=[2], name="aten::mm")
    delay = make_node(2, COMP, ctrl=[1], name="[delay]")
    report = validate_nodes([op, delay], ValidationOptions())
    (problem,) = report.problems
    assert problem.kind == "cycle" and set(problem.related_ids) == {1, 2}
    assert "'aten::mm'" in problem.message or "'[delay]'" in problem.message
    assert "ctrl_deps" in problem.message
    # without the ctrl dep, nothing
    assert kinds([make_node(1, COMP, deps=[2]), make_node(2, COMP)]) == []


def test_a_ctrl_dep_on_itself_is_a_self_dep() -> None:
    assert kinds([make_node(1, COMP, ctrl=[1])]) == [("self_dep", 1)]


def test_metadata_nodes_unsupported_collectives_and_send_recv_ends() -> None:
    nodes = [
        make_node(0, NodeType.METADATA_NODE, name="process_group:init"),
        collective(1, comm_type=CollectiveCommType.BARRIER),
        collective(2, comm_type=CollectiveCommType.REDUCE),
        collective(3, comm_type=CollectiveCommType.ALL_TO_ALL),  # runs
        make_node(4, SEND, comm_size=8, pg_name="2"),
        make_node(5, RECV, comm_size=8, pg_name="2", comm_src=0, comm_tag=0),  # complete
        make_node(6, RECV, comm_size=8, comm_tag=3),
    ]
    assert kinds(nodes) == [
        ("astra_sim_unsupported", 0), ("astra_sim_unsupported", 1),
        ("astra_sim_unsupported", 2), ("missing_attr", 4), ("missing_attr", 4),
        ("missing_attr", 6),
    ]  # fmt: skip
    assert kinds(nodes, astra_sim=False) == []


def test_comm_group_file_lists_every_group() -> None:
    nodes = [collective(1, "1"), collective(2, "2"), collective(3, "3")]
    groups = frozenset({"1", "3"})
    assert kinds(nodes, comm_groups=groups) == [("unknown_group", 2)]


def test_chakra_validate_fails_naming_the_nodes(tmp_path: Path) -> None:
    ets = []
    for rank in range(2):
        nodes = [make_node(1, COMP, deps=[2], name="aten::mm"),
                 make_node(2, COMP, ctrl=[1], name="[delay]"),
                 collective(3, pg_name="0x7f3a2c10d740")]  # fmt: skip
        path = tmp_path / f"w.{rank}.et"
        write_et(path, GlobalMetadata(version="0.0.4"), nodes)
        ets.append(path)
    (tmp_path / "w.comm_groups.json").write_text(json.dumps({"1": [0, 1]}))
    proc = subprocess.run([sys.executable, "-m", "chakra.cli.validate", *map(str, ets)],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "node 3 ('op3') has pg_name '0x7f3a2c10d740'" in proc.stdout
    assert "names group '0x7f3a2c10d740', which the comm-group file does not list" in proc.stdout
    assert "dependency cycle" in proc.stdout and "'aten::mm'" in proc.stdout
    generic = subprocess.run([sys.executable, "-m", "chakra.cli.validate", "--no-astra-sim",
                              "--comm-groups", str(tmp_path / "w.comm_groups.json"),
                              *map(str, ets)], capture_output=True, text=True)  # fmt: skip
    assert "invalid_pg_name" not in generic.stdout and "unknown_group" in generic.stdout
    assert "cycle" in generic.stdout  # a cycle is a fault for any consumer


def test_what_astra_sim_reads_as_optional_is_accepted() -> None:
    """No ``is_cpu_op`` (the feeder reads false: a GPU node), a send naming only its
    destination, a receive only its source: ASTRA-sim runs them (the near end is the rank
    running the file); a send or receive without its far end it cannot run."""
    bare = Node(id=1, name="COMP_NODE_tb0_step1", type=COMP, duration_micros=2)
    send = Node(id=2, name="send", type=SEND, data_deps=[1])
    recv = Node(id=3, name="recv", type=RECV, data_deps=[2])
    for node, far in ((send, "comm_dst"), (recv, "comm_src")):
        for name, value in (("comm_size", 8), (far, 1), ("comm_tag", 0)):
            set_attr(node, name, value)
    assert kinds([bare, send, recv]) == []
    for node_type, far in ((SEND, "comm_dst"), (RECV, "comm_src")):
        endless = Node(id=4, name="p2p", type=node_type)
        set_attr(endless, "comm_size", 8)
        set_attr(endless, "comm_tag", 0)
        (problem,) = validate_nodes([endless], ValidationOptions()).problems
        assert problem.message == (f"node 4 ('p2p') is a {NodeType(node_type).name} without"
                                   f" {far}, which ASTRA-sim requires")  # fmt: skip


def test_custom_collective_files_pass_chakra_validate(tmp_path: Path) -> None:
    """Files shaped like ASTRA-sim's custom_ring_allreduce_8npus_1MB example (35 nodes a
    rank, none with ``is_cpu_op``; sends with only ``comm_dst``, receives with only
    ``comm_src``), which ASTRA-sim runs to the end."""
    paths = write_ring_allreduce(tmp_path)
    for path in paths:
        assert validate_et(path).problems == ()  # ASTRA-sim's checks too
    proc = subprocess.run([sys.executable, "-m", "chakra.cli.validate", *map(str, paths)],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [line for line in proc.stdout.splitlines() if line.startswith(str(tmp_path))] == [
        f"{path}: ok (35 nodes)" for path in paths
    ]
