"""The comm-group file rule (:mod:`chakra.convert.group_file`): a group id named by both the
file and this rank must have the same members; anything else is added."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra.convert.group_file import (
    add_comm_groups,
    merged_comm_groups,
    read_comm_groups,
)
from chakra.errors import ChakraError


def test_no_file_reads_as_none(tmp_path: Path) -> None:
    assert read_comm_groups(tmp_path / "w.comm_groups.json") is None


@pytest.mark.parametrize(
    "text", ["", "[1, 2]", '{"1": 3}', '{"1": [0, "1"]}', '{"1": [true]}', "[" * 100_000]
)
def test_a_file_that_is_not_a_group_table_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "w.comm_groups.json"
    path.write_text(text)
    with pytest.raises(ChakraError, match=r"w\.comm_groups\.json: not a comm-group JSON file"):
        read_comm_groups(path)


def test_groups_of_one_job_merge_and_members_are_sorted(tmp_path: Path) -> None:
    path = tmp_path / "w.comm_groups.json"
    path.write_text('{"1": [3, 1, 2, 0], "2": [1, 0]}')
    table = merged_comm_groups(path, read_comm_groups(path), {"1": [0, 1, 2, 3],
                               "3": [3, 2]}, "r2.json")  # fmt: skip
    assert table == {"1": [0, 1, 2, 3], "2": [0, 1], "3": [2, 3]}


@pytest.mark.parametrize("members", [[0, 1], [0, 1, 2, 3, 4], [0, 1, 2, 4]])
def test_a_group_with_other_members_is_refused(tmp_path: Path, members: list[int]) -> None:
    path = tmp_path / "w.comm_groups.json"
    path.write_text('{"1": [0, 1, 2, 3]}')
    with pytest.raises(ChakraError) as refused:
        add_comm_groups(path, {"1": members}, "r0.json")
    message = str(refused.value)
    assert "\n" not in message and "group 1 lists ranks [0, 1, 2, 3] but r0.json" in message
    assert path.read_text() == '{"1": [0, 1, 2, 3]}'


def test_long_member_lists_are_cut_in_the_message(tmp_path: Path) -> None:
    path = tmp_path / "w.comm_groups.json"
    with pytest.raises(ChakraError, match=r"\[0, 1, 2, 3, 4, 5, 6, 7, \.\.\. 92 more\]"):
        merged_comm_groups(path, {"1": list(range(100))}, {"1": [0, 1]}, "r0.json")
