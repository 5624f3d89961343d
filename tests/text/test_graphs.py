"""Every parallelism type, node by node, against graphs worked out by hand from reference §7.1.

Rows are (id, name, COMP, duration_us, deps) or (id, name, COLL, comm_type, comm_size, deps);
comm types: ALL_REDUCE 0, ALL_GATHER 2, ALL_TO_ALL 6, REDUCE_SCATTER 7.
"""

from __future__ import annotations

from chakra.text import build_npu_graph, parse_workload
from tests.text.helpers import COLL, COMP, row


def graph(text: str, passes: int) -> list[tuple]:
    return [row(node) for node in build_npu_graph(parse_workload(text, "w.txt"), passes)]


MICRO = """MICRO
3
a -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 5
b -1 5 NONE 0 5 NONE 0 5 ALLGATHER 2048 5
c -1 5 NONE 0 5 NONE 0 5 NONE 0 5
"""


def test_micro_one_and_two_passes_skip_none() -> None:
    one = [(0, "COMM_COLL_NODE_a_ALLREDUCE", COLL, 0, 1024, []),
           (1, "COMM_COLL_NODE_b_ALLGATHER", COLL, 2, 2048, [])]  # fmt: skip
    assert graph(MICRO, 1) == one
    assert graph(MICRO, 2) == [
        *one,
        (2, "COMM_COLL_NODE_a_ALLREDUCE", COLL, 0, 1024, []),
        (3, "COMM_COLL_NODE_b_ALLGATHER", COLL, 2, 2048, []),
    ]


DATA = """DATA
2
l0 -1 10 NONE 0 20 NONE 0 30 ALLREDUCE 100 1
l1 -1 11 NONE 0 21 NONE 0 31 REDUCESCATTER 200 1
"""
DATA_PASS_1 = [
    (0, "COMP_NODE_l0_FWD", COMP, 10, []),
    (1, "COMP_NODE_l1_FWD", COMP, 11, [0]),
    (2, "COMP_NODE_l1_BWD_WG", COMP, 31, [1]),
    (3, "COMM_COLL_NODE_l1_REDUCESCATTER", COLL, 7, 200, [2]),
    (4, "COMP_NODE_l1_BWD_IG", COMP, 21, [2]),
    (5, "COMP_NODE_l0_BWD_WG", COMP, 30, [4]),
    (6, "COMM_COLL_NODE_l0_ALLREDUCE", COLL, 0, 100, [5]),
]


def test_data_one_pass() -> None:
    assert graph(DATA, 1) == DATA_PASS_1


def test_data_two_passes_forward_waits_for_previous_wg_collective() -> None:
    assert graph(DATA, 2) == [
        *DATA_PASS_1,
        (7, "COMP_NODE_l0_FWD", COMP, 10, [6]),
        (8, "COMP_NODE_l1_FWD", COMP, 11, [7, 3]),
        (9, "COMP_NODE_l1_BWD_WG", COMP, 31, [8]),
        (10, "COMM_COLL_NODE_l1_REDUCESCATTER", COLL, 7, 200, [9]),
        (11, "COMP_NODE_l1_BWD_IG", COMP, 21, [9]),
        (12, "COMP_NODE_l0_BWD_WG", COMP, 30, [11]),
        (13, "COMM_COLL_NODE_l0_ALLREDUCE", COLL, 0, 100, [12]),
    ]


def test_data_none_wg_collective_is_skipped_and_bypassed() -> None:
    text = DATA.replace("REDUCESCATTER 200", "NONE 0")
    assert graph(text, 2) == [
        (0, "COMP_NODE_l0_FWD", COMP, 10, []),
        (1, "COMP_NODE_l1_FWD", COMP, 11, [0]),
        (2, "COMP_NODE_l1_BWD_WG", COMP, 31, [1]),
        (3, "COMP_NODE_l1_BWD_IG", COMP, 21, [2]),
        (4, "COMP_NODE_l0_BWD_WG", COMP, 30, [3]),
        (5, "COMM_COLL_NODE_l0_ALLREDUCE", COLL, 0, 100, [4]),
        (6, "COMP_NODE_l0_FWD", COMP, 10, [5]),
        (7, "COMP_NODE_l1_FWD", COMP, 11, [6, 2]),  # l1's skipped WG collective -> its WG comp
        (8, "COMP_NODE_l1_BWD_WG", COMP, 31, [7]),
        (9, "COMP_NODE_l1_BWD_IG", COMP, 21, [8]),
        (10, "COMP_NODE_l0_BWD_WG", COMP, 30, [9]),
        (11, "COMM_COLL_NODE_l0_ALLREDUCE", COLL, 0, 100, [10]),
    ]


MODEL = """MODEL
2
a -1 10 ALLGATHER 1000 20 ALLREDUCE 2000 30 NONE 0 1
b -1 11 ALLGATHER 1100 21 ALLREDUCE 2100 31 NONE 0 1
"""
MODEL_PASS_1 = [
    (0, "COMP_NODE_a_FWD", COMP, 10, []),
    (1, "COMM_COLL_NODE_a_ALLGATHER", COLL, 2, 1000, [0]),
    (2, "COMP_NODE_b_FWD", COMP, 11, [1]),
    (3, "COMM_COLL_NODE_b_ALLGATHER", COLL, 2, 1100, [2]),
    (4, "COMP_NODE_b_BWD_IG", COMP, 21, [3]),
    (5, "COMM_COLL_NODE_b_ALLREDUCE", COLL, 0, 2100, [4]),
    (6, "COMP_NODE_b_BWD_WG", COMP, 31, [4]),
    (7, "COMP_NODE_a_BWD_IG", COMP, 20, [6, 5]),
    (8, "COMP_NODE_a_BWD_WG", COMP, 30, [7]),  # layer 0 (reverse index 1 = 2-1): no IG comm
]


def test_model_one_pass() -> None:
    assert graph(MODEL, 1) == MODEL_PASS_1


def test_model_two_passes_forward_waits_for_previous_wg_compute() -> None:
    assert graph(MODEL, 2) == [
        *MODEL_PASS_1,
        (9, "COMP_NODE_a_FWD", COMP, 10, [8]),
        (10, "COMM_COLL_NODE_a_ALLGATHER", COLL, 2, 1000, [9]),
        (11, "COMP_NODE_b_FWD", COMP, 11, [10, 6]),
        (12, "COMM_COLL_NODE_b_ALLGATHER", COLL, 2, 1100, [11]),
        (13, "COMP_NODE_b_BWD_IG", COMP, 21, [12]),
        (14, "COMM_COLL_NODE_b_ALLREDUCE", COLL, 0, 2100, [13]),
        (15, "COMP_NODE_b_BWD_WG", COMP, 31, [13]),
        (16, "COMP_NODE_a_BWD_IG", COMP, 20, [15, 14]),
        (17, "COMP_NODE_a_BWD_WG", COMP, 30, [16]),
    ]


def test_model_none_forward_collective_keeps_the_chain() -> None:
    text = MODEL.replace("10 ALLGATHER 1000", "10 NONE 0")
    assert graph(text, 1)[:3] == [
        (0, "COMP_NODE_a_FWD", COMP, 10, []),
        (1, "COMP_NODE_b_FWD", COMP, 11, [0]),
        (2, "COMM_COLL_NODE_b_ALLGATHER", COLL, 2, 1100, [1]),
    ]


HYBRID = """HYBRID_DATA_MODEL
2
a -1 10 ALLGATHER 1000 20 ALLREDUCE 2000 30 ALLREDUCE 3000 1
b -1 11 ALLGATHER 1100 21 REDUCESCATTER 2100 31 ALLREDUCE 3100 1
"""
HDM_PASS_1 = [
    (0, "COMP_NODE_a_FWD", COMP, 10, []),
    (1, "COMM_COLL_NODE_a_ALLGATHER", COLL, 2, 1000, [0]),
    (2, "COMP_NODE_b_FWD", COMP, 11, [1]),
    (3, "COMM_COLL_NODE_b_ALLGATHER", COLL, 2, 1100, [2]),
    (4, "COMP_NODE_b_BWD_IG", COMP, 21, [3]),
    (5, "COMM_COLL_NODE_b_IG_COMM__REDUCESCATTER", COLL, 7, 2100, [4]),
    (6, "COMP_NODE_b_BWD_WG", COMP, 31, [4]),
    (7, "COMM_COLL_NODE_b_ALLREDUCE", COLL, 0, 3100, [6]),
    (8, "COMP_NODE_a_BWD_IG", COMP, 20, [6, 5]),
    (9, "COMP_NODE_a_BWD_WG", COMP, 30, [8]),
    (10, "COMM_COLL_NODE_a_ALLREDUCE", COLL, 0, 3000, [9]),
]


def test_hybrid_data_model_one_pass() -> None:
    assert graph(HYBRID, 1) == HDM_PASS_1


def test_hybrid_data_model_two_passes_forward_waits_for_previous_wg_collective() -> None:
    assert graph(HYBRID, 2) == [
        *HDM_PASS_1,
        (11, "COMP_NODE_a_FWD", COMP, 10, [10]),
        (12, "COMM_COLL_NODE_a_ALLGATHER", COLL, 2, 1000, [11]),
        (13, "COMP_NODE_b_FWD", COMP, 11, [7, 12]),  # previous pass first, then layer a
        (14, "COMM_COLL_NODE_b_ALLGATHER", COLL, 2, 1100, [13]),
        (15, "COMP_NODE_b_BWD_IG", COMP, 21, [14]),
        (16, "COMM_COLL_NODE_b_IG_COMM__REDUCESCATTER", COLL, 7, 2100, [15]),
        (17, "COMP_NODE_b_BWD_WG", COMP, 31, [15]),
        (18, "COMM_COLL_NODE_b_ALLREDUCE", COLL, 0, 3100, [17]),
        (19, "COMP_NODE_a_BWD_IG", COMP, 20, [17, 16]),
        (20, "COMP_NODE_a_BWD_WG", COMP, 30, [19]),
        (21, "COMM_COLL_NODE_a_ALLREDUCE", COLL, 0, 3000, [20]),
    ]


def test_hybrid_model_data_names_the_ig_collective_without_suffix() -> None:
    text = HYBRID.replace("HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA")
    rows = graph(text, 2)
    assert rows[5] == (5, "COMM_COLL_NODE_b_REDUCESCATTER", COLL, 7, 2100, [4])
    assert rows[16] == (16, "COMM_COLL_NODE_b_REDUCESCATTER", COLL, 7, 2100, [15])
    assert rows[13] == (13, "COMP_NODE_b_FWD", COMP, 11, [7, 12])
    others = [r for i, r in enumerate(graph(HYBRID, 2)) if i not in (5, 16)]
    assert [r for i, r in enumerate(rows) if i not in (5, 16)] == others


DLRM = """HYBRID_DLRM 1
3
emb -1 10 ALLTOALL 4000 20 ALLTOALL 5000 30 NONE 0 1
bot -1 11 NONE 0 21 NONE 0 31 ALLREDUCE 6000 1
top -1 12 ALLREDUCE 7000 22 NONE 0 32 ALLREDUCE 8000 1
"""
DLRM_PASS_1 = [
    (0, "COMP_NODE_emb_FWD", COMP, 10, []),
    (1, "COMM_COLL_NODE_emb_ALLTOALL", COLL, 6, 4000, [0]),
    (2, "COMP_NODE_bot_FWD", COMP, 11, [0, 1]),  # last bottom layer joins layer 0's all-to-all
    (3, "COMP_NODE_top_FWD", COMP, 12, [2]),  # forward ALLREDUCE: not ALLTOALL, no node
    (4, "COMP_NODE_top_BWD_WG", COMP, 32, [3]),
    (5, "COMM_COLL_NODE_top_ALLREDUCE", COLL, 0, 8000, [4]),
    (6, "COMP_NODE_top_BWD_IG", COMP, 22, [4]),
    (7, "COMM_COLL_NODE_emb_ALLTOALL", COLL, 6, 5000, [6]),  # layer 0's IG comm at layer 2
    (8, "COMP_NODE_bot_BWD_WG", COMP, 31, [6]),
    (9, "COMM_COLL_NODE_bot_ALLREDUCE", COLL, 0, 6000, [8]),
    (10, "COMP_NODE_bot_BWD_IG", COMP, 21, [8]),
    (11, "COMP_NODE_emb_BWD_WG", COMP, 30, [10, 7]),
]


def test_dlrm_one_pass() -> None:
    assert graph(DLRM, 1) == DLRM_PASS_1


def test_dlrm_two_passes_forward_waits_for_wg_collective_or_compute() -> None:
    assert graph(DLRM, 2) == [
        *DLRM_PASS_1,
        (12, "COMP_NODE_emb_FWD", COMP, 10, [11]),  # emb has no WG collective: its WG comp
        (13, "COMM_COLL_NODE_emb_ALLTOALL", COLL, 6, 4000, [12]),
        (14, "COMP_NODE_bot_FWD", COMP, 11, [9, 12, 13]),
        (15, "COMP_NODE_top_FWD", COMP, 12, [5, 14]),
        (16, "COMP_NODE_top_BWD_WG", COMP, 32, [15]),
        (17, "COMM_COLL_NODE_top_ALLREDUCE", COLL, 0, 8000, [16]),
        (18, "COMP_NODE_top_BWD_IG", COMP, 22, [16]),
        (19, "COMM_COLL_NODE_emb_ALLTOALL", COLL, 6, 5000, [18]),
        (20, "COMP_NODE_bot_BWD_WG", COMP, 31, [18]),
        (21, "COMM_COLL_NODE_bot_ALLREDUCE", COLL, 0, 6000, [20]),
        (22, "COMP_NODE_bot_BWD_IG", COMP, 21, [20]),
        (23, "COMP_NODE_emb_BWD_WG", COMP, 30, [22, 19]),
    ]


def test_dlrm_enhanced_is_the_same_graph() -> None:
    text = DLRM.replace("HYBRID_DLRM", "HYBRID_DLRM_ENHANCED")
    assert graph(text, 2) == graph(DLRM, 2)


def test_dlrm_without_layer0_alltoall_joins_layer0_compute() -> None:
    text = DLRM.replace("10 ALLTOALL 4000", "10 NONE 0")
    assert graph(text, 1)[:3] == [
        (0, "COMP_NODE_emb_FWD", COMP, 10, []),
        (1, "COMP_NODE_bot_FWD", COMP, 11, [0]),
        (2, "COMP_NODE_top_FWD", COMP, 12, [1]),
    ]
