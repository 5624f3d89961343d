"""Process groups named by address (schema 1.0.1): one name per group, the same on every rank."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import chakra
from chakra.ingest import load_host_trace
from chakra.ingest.host_comms import parse_process_groups
from chakra.ingest.host_model import OpArgs

WORLD_ADDRESS, PAIR_ADDRESS = 0x7F3A12349D40, 0x7F3A12349EE8
SRC = str(Path(chakra.__file__).resolve().parents[1])


def comms_node(node_id: int, address: int, place: int, name: str, size: int) -> dict:
    """A 1.0.1 ``record_param_comms``: [tensors, seq, pg address, rank, name, splits, size]."""
    return {
        "id": node_id, "name": "record_param_comms", "parent": 1, "rf_id": node_id,
        "inputs": [[[10, 11, 0, 8, 4, "cuda:0"]], 0, address, place, name, [], [], size],
        "input_shapes": [[[8]], [], [], [], [], [], [], []],
        "input_types": ["GenericList[Tensor(float)]", "Int", "Int", "Int", "String",
                        "GenericList[Int]", "GenericList[Int]", "Int"],
        "outputs": [], "output_shapes": [], "output_types": [],
    }  # fmt: skip


def legacy_trace(tmp_path: Path, comms: list[dict], table: Optional[list] = None) -> Path:
    nodes: list[dict[str, Any]] = [
        {"id": 1, "name": "[pytorch|profiler|execution_graph|process]", "parent": 1,
         "inputs": [], "input_shapes": [], "input_types": [], "outputs": [],
         "output_shapes": [], "output_types": []},
    ]  # fmt: skip
    if table is not None:
        nodes.append({"id": 2, "name": "## process_group:init ##", "parent": 1,
                      "inputs": [json.dumps(table)], "input_shapes": [[]],
                      "input_types": ["String"], "outputs": [], "output_shapes": [],
                      "output_types": []})  # fmt: skip
    path = tmp_path / "h.json"
    path.write_text(json.dumps({"schema": "1.0.1", "pid": 7, "nodes": nodes + comms}))
    return path


def test_addresses_become_small_names_by_size_then_first_use(tmp_path: Path) -> None:
    # the pair group is used first, but the world group (size 4) is named "0"
    comms = [comms_node(5, PAIR_ADDRESS, 1, "allgather", 2),
             comms_node(6, WORLD_ADDRESS, 3, "allreduce", 4),
             comms_node(7, PAIR_ADDRESS, 1, "allreduce", 2)]  # fmt: skip
    trace = load_host_trace(legacy_trace(tmp_path, comms))
    named = [(op.comm.pg_name, op.comm.pg_address, op.comm.pg_rank, op.comm.pg_size)
             for op in trace.ops if op.comm]  # fmt: skip
    assert named == [("1", PAIR_ADDRESS, 1, 2), ("0", WORLD_ADDRESS, 3, 4),
                     ("1", PAIR_ADDRESS, 1, 2)]  # fmt: skip
    assert any("identified by size and order of first use" in n for n in trace.notes)


def test_addresses_matched_to_the_group_table_by_size_and_rank(tmp_path: Path) -> None:
    table = [{"pg_name": "0", "pg_desc": "default_pg", "ranks": [], "group_size": 4},
             {"pg_name": "1", "pg_desc": "tp", "ranks": [0, 1], "group_size": 2},
             {"pg_name": "2", "pg_desc": "tp", "ranks": [2, 3], "group_size": 2}]  # fmt: skip
    # global rank 3 (its place in the world group): second member of the pair group [2, 3]
    comms = [comms_node(5, WORLD_ADDRESS, 3, "allreduce", 4),
             comms_node(6, PAIR_ADDRESS, 1, "allgather", 2)]  # fmt: skip
    trace = load_host_trace(legacy_trace(tmp_path, comms, table))
    assert [op.comm.pg_name for op in trace.ops if op.comm] == ["0", "2"]
    assert any("matched to the process_group:init table" in n for n in trace.notes)


def test_a_collective_without_group_joins_the_world_group(tmp_path: Path) -> None:
    lone = comms_node(5, 0, 0, "allreduce", 4)
    lone["inputs"][2], lone["input_types"][2] = "<None>", "None"
    trace = load_host_trace(legacy_trace(tmp_path, [lone]))
    (op,) = [op for op in trace.ops if op.comm]
    assert (op.comm.pg_name, op.comm.pg_address) == ("0", None)
    assert any("taken to be the world group '0'" in n for n in trace.notes)


#: 40 groups of ``ranks: []`` (range(group_size)) of 2^24 ranks each: 1 KB of table that
#: expanded to 671 million ranks in memory (MemoryError; issue 30, finding 9).
EXPANDING_TABLE = [{"pg_name": str(n), "ranks": [], "group_size": 2**24} for n in range(40)]


def test_a_table_whose_groups_expand_beyond_the_limit_is_unknown() -> None:
    table = json.dumps(EXPANDING_TABLE)
    groups, note = parse_process_groups(OpArgs(json.dumps({"values": [table]}).encode()))
    assert groups == ()
    assert note == (
        "process_group:init: its groups hold 671,088,640 ranks in all (ranks: [] stands for "
        "group_size ranks), over 16,777,216; groups unknown"
    )
    fits = json.dumps(
        [{"pg_name": "0", "ranks": [], "group_size": 2**23}, {"pg_name": "x", "ranks": [0, 1]}]
    )
    groups, note = parse_process_groups(OpArgs(json.dumps({"values": [fits]}).encode()))
    assert len(groups) == 2 and note is None


def test_an_expanding_table_is_one_note_not_a_memory_error(tmp_path: Path) -> None:
    """chakra_trace_info under a 3 GiB address-space limit: the table is reported unknown,
    in one note; it used to expand every group (MemoryError after ~20 s)."""
    comms = [comms_node(5, WORLD_ADDRESS, 3, "allreduce", 2**24)]
    path = legacy_trace(tmp_path, comms, EXPANDING_TABLE)
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
        "from chakra.cli.trace_info import main; sys.argv[0] = 'chakra_trace_info'; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "671,088,640 ranks in all" in done.stdout


def test_a_group_named_by_a_digit_int_refuses_loads(tmp_path: Path) -> None:
    """A group named "²", a digit to ``str.isdigit`` that ``int`` refuses: ValueError when
    groups were named (issue 30, finding 9)."""
    table = [{"pg_name": "²", "ranks": [0, 1, 2, 3]}, {"pg_name": "7", "ranks": [0, 1]}]
    comms = [comms_node(5, WORLD_ADDRESS, 3, "allreduce", 4)]
    trace = load_host_trace(legacy_trace(tmp_path, comms, table))
    assert [op.comm.pg_address for op in trace.ops if op.comm] == [WORLD_ADDRESS]
