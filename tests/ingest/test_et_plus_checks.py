"""What an ET+ must satisfy to be converted (checked by the converter's reader and by the
linker before it writes): here, no parent cycle over ``ctrl_deps`` nor over ``ran_under``."""

from __future__ import annotations

from typing import Optional

import pytest

from chakra.errors import TraceFormatError
from chakra.ingest.et_plus_checks import check_parents
from chakra.ingest.et_plus_model import EtPlusNode

PROCESS = "[pytorch|profiler|execution_trace|process]"


def _node(node_id: int, parent: Optional[int], ran_under: Optional[int] = None,
          name: str = "op", cat: Optional[str] = None) -> EtPlusNode:  # fmt: skip
    return EtPlusNode(node_id, name, parent, ran_under=ran_under, cat=cat)


def test_a_tree_with_a_self_named_root_passes() -> None:
    """Also a kernel whose launch parent is a host op, and a ``ran_under`` naming no node."""
    check_parents("p.json", [_node(1, 1, name=PROCESS), _node(2, 1), _node(3, 2, ran_under=1),
                             _node(4, 3, cat="kernel"), _node(5, 99, ran_under=98)])  # fmt: skip


@pytest.mark.parametrize(
    ("nodes", "shown"),
    [
        ([_node(1, 1, name=PROCESS), _node(2, 2)], "2 -> 2"),
        ([_node(1, None), _node(2, 3), _node(3, 2)], "2 -> 3 -> 2"),
        ([_node(1, None), _node(2, 9), _node(9, 3, cat="kernel"), _node(3, 2)], "2 -> 9 -> 3 -> 2"),
    ],
)  # fmt: skip
def test_ctrl_deps_cycles(nodes: list[EtPlusNode], shown: str) -> None:
    with pytest.raises(TraceFormatError, match=f"^p.json: parent cycle through nodes {shown}$"):
        check_parents("p.json", nodes)


@pytest.mark.parametrize(
    ("nodes", "shown"),
    [
        ([_node(1, None), _node(2, 1, ran_under=2)], "2 -> 2"),
        ([_node(1, None), _node(2, 1, ran_under=3), _node(3, 2)], "2 -> 3 -> 2"),
        ([_node(1, None, ran_under=2), _node(2, 1)], "1 -> 2 -> 1"),  # root ran under its child
    ],
)  # fmt: skip
def test_ran_under_cycles(nodes: list[EtPlusNode], shown: str) -> None:
    """The converter follows ``ran_under`` where it names a node, else ``ctrl_deps``."""
    expected = rf"parent \(ran_under\) cycle through nodes {shown}$"
    with pytest.raises(TraceFormatError, match=expected):
        check_parents("p.json", nodes)


def test_ran_under_naming_no_node_falls_back_to_ctrl_deps() -> None:
    check_parents("p.json", [_node(1, None), _node(2, 1, ran_under=7), _node(3, 2, ran_under=5)])
