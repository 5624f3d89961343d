"""``chakra_validate``: per-file verdicts, exit status, cross-rank collective consistency."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from chakra.et import GlobalMetadata, Node, NodeType, add_attr, write_et
from chakra.et.graph_checks import ValidationOptions
from chakra.tools.validate_files import check_file, cross_rank_mismatches


def validate(*args: str) -> subprocess.CompletedProcess:
    script = [sys.executable, "-m", "chakra.cli.validate"]
    return subprocess.run([*script, *args], capture_output=True, text=True, check=False)


def coll(node_id: int, comm_type: int, size: int, pg: str = "1", deps: tuple = ()) -> Node:
    node = Node(id=node_id, name=f"coll{node_id}", type=NodeType.COMM_COLL_NODE)
    node.data_deps.extend(deps)
    add_attr(node, "is_cpu_op", False)
    add_attr(node, "comm_type", comm_type)
    add_attr(node, "comm_size", size)
    add_attr(node, "pg_name", pg)
    return node


def comp(node_id: int, deps: tuple = ()) -> Node:
    node = Node(id=node_id, name=f"comp{node_id}", type=NodeType.COMP_NODE)
    node.data_deps.extend(deps)
    add_attr(node, "is_cpu_op", False)
    return node


def write(path: Path, nodes: list) -> str:
    write_et(path, GlobalMetadata(version="1.0.0"), nodes)
    return str(path)


def test_good_file_passes(tmp_path: Path) -> None:
    good = write(tmp_path / "good.et", [comp(0), coll(1, 0, 64, deps=(0,))])
    result = validate(good)
    assert result.returncode == 0, result.stderr
    assert "ok (2 nodes)" in result.stdout


def test_broken_files_fail_with_problems(tmp_path: Path) -> None:
    dangling = write(tmp_path / "dangling.et", [comp(0, deps=(7,))])
    cycle = write(tmp_path / "cycle.et", [comp(0, deps=(1,)), comp(1, deps=(0,))])
    no_size = Node(id=0, name="c", type=NodeType.COMM_COLL_NODE)
    add_attr(no_size, "is_cpu_op", False)
    add_attr(no_size, "comm_type", 0)
    missing = write(tmp_path / "missing.et", [no_size])
    garbage = tmp_path / "garbage.et"
    garbage.write_bytes(b"\xff\xff\xff\xff")
    result = validate(dangling, cycle, missing, str(garbage))
    assert result.returncode == 1
    assert "dangling_data_dep" in result.stdout and "cycle" in result.stdout
    assert "missing_attr" in result.stdout and "unreadable" in result.stdout
    assert result.stderr.strip() == "chakra_validate: error: 4 of 4 files failed validation"


def test_cross_rank_mismatch_detected(tmp_path: Path) -> None:
    rank0 = write(tmp_path / "r0.et", [coll(0, 0, 64), coll(1, 2, 128), coll(2, 0, 8, pg="2")])
    rank1 = write(tmp_path / "r1.et", [coll(0, 0, 64), coll(1, 2, 256), coll(2, 0, 8, pg="2")])
    results = [check_file(p, ValidationOptions()) for p in (rank0, rank1)]
    (mismatch,) = cross_rank_mismatches(results)
    assert mismatch.pg == "1" and "operation #2" in mismatch.message
    assert "rank 0: node 1 'coll1' comm_type 2, 128 bytes" in mismatch.message
    assert "rank 1: node 1 'coll1' comm_type 2, 256 bytes" in mismatch.message
    result = validate("--json", rank0, rank1)
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert [f["ok"] for f in report["files"]] == [True, True]
    assert [c["pg"] for c in report["cross_rank"]] == ["1"]


def test_cross_rank_count_difference_and_agreement(tmp_path: Path) -> None:
    rank0 = write(tmp_path / "r0.et", [coll(0, 0, 64), coll(1, 0, 64)])
    rank1 = write(tmp_path / "r1.et", [coll(5, 0, 64)])
    rank2 = write(tmp_path / "r2.et", [coll(3, 0, 64), comp(4), coll(9, 0, 64)])
    results = [check_file(p, ValidationOptions()) for p in (rank0, rank1, rank2)]
    (mismatch,) = cross_rank_mismatches(results)
    assert "rank 0: 2 communication nodes; rank 1: 1 communication nodes" in mismatch.message
    assert cross_rank_mismatches([results[0], results[2]]) == []
    assert validate(rank0, rank2).returncode == 0


def test_groups_on_one_file_only_are_said_not_compared(tmp_path: Path) -> None:
    rank0 = write(tmp_path / "r0.et", [coll(0, 0, 64, pg="1")])
    rank1 = write(tmp_path / "r1.et", [coll(0, 2, 64, pg="2")])
    result = validate(rank0, rank1)
    assert result.returncode == 0
    assert "no process group is used by two files: nothing compared" in result.stdout
    assert "used by one file only, not compared: 1, 2" in result.stdout


def test_ranks_whose_collectives_agree_but_cannot_meet(tmp_path: Path) -> None:
    # the same two all-reduces in the same group, same type and size, but rank 0 issues
    # #0 (node 1) only after #1 (node 2) completed, while rank 1 issues them in order: #1
    # waits for rank 1, which waits at #0 for rank 0: a replay deadlocks. Before, validate
    # compared the sequences only and said ok.
    rank0 = write(tmp_path / "job.0.et", [coll(1, 0, 64, deps=(2,)), coll(2, 0, 64)])
    rank1 = write(tmp_path / "job.1.et", [coll(1, 0, 64), coll(2, 0, 64, deps=(1,))])
    results = [check_file(p, ValidationOptions()) for p in (rank0, rank1)]
    assert cross_rank_mismatches(results) == []
    result = validate(rank0, rank1)
    assert result.returncode == 1
    assert "cross-rank: the ranks replay together: no, their collectives cannot all meet:" in (
        result.stdout
    )
    assert "deadlock: communication #0 of group '1'" in result.stdout
    assert "cannot all meet" in result.stderr and len(result.stderr.splitlines()) == 1
    # a verdict like the others ("N files failed validation"), which the fuzz harness
    # accepts without a file name (the campaign's one finding of 35,000: it named none)
    from tests.fuzz.targets import VALIDATION_FAILED

    assert VALIDATION_FAILED.search(result.stderr)
    document = json.loads(validate("--json", rank0, rank1).stdout)
    assert document["meet"] is False and "deadlock" in document["meet_error"]
    # in order on both ranks, they meet
    fine = write(tmp_path / "ok.0.et", [coll(1, 0, 64), coll(2, 0, 64, deps=(1,))])
    ok = validate(fine, rank1)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "cross-rank: the ranks replay together: yes" in ok.stdout


def test_a_comm_group_file_that_is_no_group_table_is_one_line(tmp_path: Path) -> None:
    # the converter's reader of PREFIX.comm_groups.json is the validator's too: the same
    # refusals (not JSON; not {"<pg_name>": [ranks]}; no such file), one line naming it
    rank0 = write(tmp_path / "job.0.et", [coll(0, 0, 64, pg="1")])
    groups = tmp_path / "job.comm_groups.json"
    assert validate(rank0).returncode == 0
    for text, says in (("{not json", "not a comm-group JSON file"),
                       ('{"1": "0,1"}', "not a comm-group JSON file")):  # fmt: skip
        groups.write_text(text)
        result = validate(rank0)
        assert result.returncode == 1
        (line,) = [x for x in result.stderr.splitlines() if ": INFO: " not in x]
        assert line.startswith("chakra_validate: error: ") and str(groups) in line
        assert says in line
    result = validate(rank0, "--comm-groups", str(tmp_path / "missing.json"))
    assert result.returncode == 1 and "missing.json" in result.stderr
