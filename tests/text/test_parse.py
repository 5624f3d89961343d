"""The text-workload parser: values, comments and blank lines, and one clear error per defect."""

from __future__ import annotations

import pytest

from chakra.errors import TraceFormatError
from chakra.et import CollectiveCommType
from chakra.text import Parallelism, Phase, TextWorkloadError, parse_workload

LAYER = "l0 -1 10 ALLGATHER 1 20 ALLTOALL 2 30 REDUCESCATTER 3 7"


def test_values_comments_and_blank_lines() -> None:
    text = f"# a comment\n\nHYBRID_DLRM 1   # bottom ends at 1\n  2\n{LAYER}\n\n   # x\n{LAYER}\n"
    workload = parse_workload(text, "w.txt")
    assert workload.parallelism is Parallelism.HYBRID_DLRM
    assert (workload.last_bottom_layer, workload.declared_layers) == (1, 2)
    first = workload.layers[0]
    assert (first.name, first.update_time, first.line) == ("l0", "7", 5)
    assert workload.layers[1].line == 8
    assert first.fwd == Phase(10, "ALLGATHER", 1)
    assert first.ig == Phase(20, "ALLTOALL", 2)
    assert first.wg == Phase(30, "REDUCESCATTER", 3)
    assert first.wg.collective is CollectiveCommType.REDUCE_SCATTER
    assert Phase(0, "NONE", 0).collective is None


def test_non_dlrm_types_ignore_extra_header_tokens() -> None:
    workload = parse_workload(f"DATA extra\n1\n{LAYER}\n")
    assert workload.last_bottom_layer is None


BAD = [
    ("", "w.txt: the workload is empty"),
    ("# only a comment\n", "w.txt: the workload is empty"),
    ("PIPELINE\n1\n", "w.txt: line 1: unsupported parallelism type 'PIPELINE'"),
    ("DATA\n", "w.txt: line 1: the layer count line is missing"),
    ("DATA\ntwo\n", "w.txt: line 2: layer count 'two' is not an integer"),
    ("DATA\n1 2\n", "w.txt: line 2: the layer count line must hold one integer"),
    ("DATA\n2\n" + LAYER + "\n", "w.txt: line 2: declares 2 layers but 1 layer lines follow"),
    ("DATA\n0\n", "w.txt: line 2: declares 0 layers but 0 layer lines follow"),
    ("DATA\n1\n\n# c\nl0 -1 10 NONE 0\n", "w.txt: line 5: a layer needs 12 columns, found 5"),
    ("DATA\n1\n" + LAYER + " 9\n", "w.txt: line 3: a layer needs 12 columns, found 13"),
    ("DATA\n1\n" + LAYER.replace("ALLTOALL", "BROADCAST") + "\n",
     "w.txt: line 3: unknown ig comm type 'BROADCAST' (expected one of ALLREDUCE, "),
    ("DATA\n1\n" + LAYER.replace(" 10 ", " 1.5 ") + "\n",
     "w.txt: line 3: fwd compute time '1.5' is not an integer"),
    ("DATA\n1\n" + LAYER.replace(" 3 ", " -3 ") + "\n",
     "w.txt: line 3: wg comm size -3 is negative"),
    ("HYBRID_DLRM\n1\n" + LAYER + "\n",
     "w.txt: line 1: HYBRID_DLRM needs the last bottom layer after the type"),
    ("HYBRID_DLRM_ENHANCED x\n1\n" + LAYER + "\n",
     "w.txt: line 1: last bottom layer 'x' is not an integer"),
    ("HYBRID_DLRM 0\n2\n" + LAYER + "\n" + LAYER + "\n",
     "w.txt: line 1: last bottom layer 0 must be between 1 and 1"),
    ("HYBRID_DLRM 2\n2\n" + LAYER + "\n" + LAYER + "\n",
     "w.txt: line 1: last bottom layer 2 must be between 1 and 1"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), BAD)
def test_errors_name_file_and_line(text: str, expected: str) -> None:
    with pytest.raises(TextWorkloadError) as caught:
        parse_workload(text, "w.txt")
    message = str(caught.value)
    assert message.startswith(expected)
    assert "\n" not in message
    assert isinstance(caught.value, TraceFormatError)


@pytest.mark.parametrize(
    ("layer", "expected"),
    [
        ("l0 -1 99999999999999999999 NONE 0 1 NONE 0 1 NONE 0 1", "fwd compute time"),
        ("l0 -1 4611686018427388 NONE 0 1 NONE 0 1 NONE 0 1", "fwd compute time"),
        ("l0 -1 1 NONE 9223372036854775808 1 NONE 0 1 NONE 0 1", "fwd comm size"),
    ],
)
def test_values_beyond_the_input_limits_name_file_and_line(layer: str, expected: str) -> None:
    with pytest.raises(TextWorkloadError, match=rf"^w\.txt: line 3: {expected} \d+ is more"):
        parse_workload(f"DATA\n1\n{layer}\n", "w.txt")
    limit = parse_workload("DATA\n1\nl0 -1 4611686018427387 NONE 9223372036854775807 1 NONE 0 "
                           "1 NONE 0 1\n", "w.txt").layers[0].fwd  # fmt: skip
    assert limit == Phase(4611686018427387, "NONE", 2**63 - 1)
