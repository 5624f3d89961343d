"""``convert_text``: one file per NPU, ids from 0 in each, metadata, and ASTRA-sim's examples."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra.errors import ChakraError, FileAccessError
from chakra.et import read_et
from chakra.et.graph_checks import validate_et
from chakra.text import SCHEMA, TextWorkloadError, convert_text
from tests.text.helpers import COLL, COMP, row, write

DATA = """DATA
2
l0 -1 10 NONE 0 20 NONE 0 30 ALLREDUCE 100 1
l1 -1 11 NONE 0 21 NONE 0 31 REDUCESCATTER 200 1
"""


def test_one_file_per_npu_ids_from_zero_and_metadata(tmp_path: Path) -> None:
    source = write(tmp_path, DATA)
    paths = convert_text(source, tmp_path / "out", num_npus=3, num_passes=2)
    assert paths == [tmp_path / f"out.{npu}.et" for npu in range(3)]
    for path in paths:
        metadata, nodes = read_et(path)
        assert [a.name for a in metadata.attr] == ["schema", "input_file"]
        assert metadata.attr[0].string_val == SCHEMA == "1.0.2-chakra.1.0.0"
        assert metadata.attr[1].string_val == DATA
        assert metadata.version == ""
        assert [n.id for n in nodes] == list(range(14))
        assert row(nodes[0]) == (0, "COMP_NODE_l0_FWD", COMP, 10, [])
        assert row(nodes[13]) == (13, "COMM_COLL_NODE_l0_ALLREDUCE", COLL, 0, 100, [12])
        assert validate_et(path).ok
    assert paths[0].read_bytes() == paths[1].read_bytes() == paths[2].read_bytes()


def test_bad_workload_writes_nothing(tmp_path: Path) -> None:
    source = write(tmp_path, DATA.replace("REDUCESCATTER", "SCATTER"))
    with pytest.raises(TextWorkloadError, match=r"w\.txt: line 4: unknown wg comm type"):
        convert_text(source, tmp_path / "out", 2, 1)
    assert list(tmp_path.glob("out*")) == []


@pytest.mark.parametrize(("npus", "passes", "what"), [(0, 1, "num_npus"), (1, 0, "num_passes")])
def test_counts_must_be_positive(tmp_path: Path, npus: int, passes: int, what: str) -> None:
    with pytest.raises(ChakraError, match=f"{what} must be at least 1"):
        convert_text(write(tmp_path, DATA), tmp_path / "out", npus, passes)


def test_missing_input(tmp_path: Path) -> None:
    with pytest.raises(FileAccessError, match="cannot read"):
        convert_text(tmp_path / "nope.txt", tmp_path / "out", 1, 1)


# ASTRA-sim's own example workloads (inputs/workload/): the all-reduce and all-to-all
# microbenchmarks, and the head of the data-parallel ResNet-50 workload.
MICRO_ALL_REDUCE = """MICRO
1
allreduce -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1048576 5
"""
MICRO_ALL_TO_ALL = """MICRO
1
alltoall -1 5 NONE 0 5 NONE 0 5 ALLTOALL 1048576 5
"""
RESNET_HEAD = """DATA
3
conv1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 37632 5
layer64_1_conv1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 16384 5
layer64_1_conv2 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 147456 5
"""


@pytest.mark.parametrize(
    ("text", "first", "count"),
    [(MICRO_ALL_REDUCE, (0, "COMM_COLL_NODE_allreduce_ALLREDUCE", COLL, 0, 1048576, []), 1),
     (MICRO_ALL_TO_ALL, (0, "COMM_COLL_NODE_alltoall_ALLTOALL", COLL, 6, 1048576, []), 1),
     (RESNET_HEAD, (0, "COMP_NODE_conv1_FWD", COMP, 5, []), 3 + 3 + 3 + 2)],
)  # fmt: skip
def test_astra_sim_examples(tmp_path: Path, text: str, first: tuple, count: int) -> None:
    (path,) = convert_text(write(tmp_path, text), tmp_path / "ex", 1, 1)
    _, nodes = read_et(path)
    assert len(nodes) == count
    assert row(nodes[0]) == first
    assert [row(n) for n in nodes]  # every node checked by row()
    assert validate_et(path).ok
