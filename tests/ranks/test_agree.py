"""``agree`` on hand-made records: splits, orphans placed by stream, fills, disagreements."""

from __future__ import annotations

from chakra.ranks import CommRecord, Fill, agree


def coll(node_id: int, comm_type: int, size: int, pg: object = "0", **more: object) -> CommRecord:
    return CommRecord(node_id, f"k{node_id}", "collective", comm_type, size, pg, **more)  # type: ignore[arg-type]


def test_a_sub_group_name_used_by_every_rank_is_split_into_consecutive_blocks() -> None:
    ranks = [[coll(1, 2, 64, "1", pg_size=2)] for _ in range(4)]
    result = agree(ranks)
    assert result.fills == {2: {1: Fill(pg_name="2")}, 3: {1: Fill(pg_name="2")}}
    assert result.compared == ["1", "2"] and result.disagreements == []
    assert result.counts == {"groups split by consecutive ranks": 2}


def test_a_last_rank_alone_in_its_sub_group_gets_a_block_of_its_own() -> None:
    # a 1.0.1 pair group over 5 ranks: ranks 0-3 say size 2, rank 4 (no partner) says 1;
    # before, the sizes disagreed and nothing was split: rank 4's collectives met ranks 0-3's
    ranks = [[coll(1, 2, 64, "1", pg_size=2)] for _ in range(4)]
    ranks.append([coll(1, 7, 32, "1", pg_size=1)])
    result = agree(ranks)
    assert result.fills == {2: {1: Fill(pg_name="2")}, 3: {1: Fill(pg_name="2")},
                            4: {1: Fill(pg_name="3")}}  # fmt: skip
    assert result.disagreements == []
    # sizes that do not tile the ranks split nothing
    odd = [[coll(1, 2, 64, "1", pg_size=2)] for _ in range(3)]
    assert agree(odd).fills == {}


def test_orphan_placed_by_stream_then_type_and_size_filled() -> None:
    stream = (0, 9)
    rank0 = [coll(1, 5, 4096, stream=stream), coll(2, 0, 64, stream=stream)]
    rank1 = [coll(7, 0, 0, None, type_guessed=True, stream=stream), coll(8, 0, 64, stream=stream)]
    result = agree([rank0, rank1])
    assert result.fills == {1: {7: Fill(pg_name="0", comm_type=5, size=4096)}}
    assert result.counts == {"orphan groups filled from the stream": 1,
                             "comm types filled from peers": 1,
                             "comm sizes filled from peers": 1}  # fmt: skip


def test_known_types_that_differ_are_a_disagreement_naming_every_rank() -> None:
    result = agree([[coll(1, 0, 64)], [coll(1, 2, 64)], [coll(1, 0, 64)]])
    (disagreement,) = result.disagreements
    assert (disagreement.pg_name, disagreement.position) == ("0", 0)
    assert disagreement.says[1] == "node 1 'k1' comm_type 2, 64 bytes"
    assert result.fills == {}


def test_an_orphan_on_a_stream_of_two_groups_is_not_placed() -> None:
    rank0 = [coll(1, 0, 8, "0", stream=(0, 1)), coll(2, 0, 8, "1", stream=(0, 1)),
             coll(3, 0, 8, None, stream=(0, 1))]  # fmt: skip
    result = agree([rank0])
    assert result.counts == {"orphans not placed in a group": 1}
    assert result.not_compared == ["0", "1"] and result.compared == []


def p2p(node_id: int, pg: str, send: bool, has_ends: bool = False) -> CommRecord:
    return CommRecord(node_id, f"p{node_id}", "p2p", None, 8, pg, has_ends=has_ends,
                      is_send=send)  # fmt: skip


def test_send_recv_ends_are_filled_from_a_group_of_two_and_the_rest_are_unpaired() -> None:
    """Group "1" is used by ranks 0 and 1: its send (rank 0) and recv (rank 1) get their
    ends. Group "7" is used by rank 0 alone: its send keeps no ends and is listed as
    unpaired; a send that names its ends already is not."""
    ranks = [[p2p(1, "1", True), p2p(2, "7", True), p2p(3, "7", True, has_ends=True)],
             [p2p(5, "1", False)]]  # fmt: skip
    agreement = agree(ranks)
    assert agreement.fills[0][1].comm_src == 0 and agreement.fills[0][1].comm_dst == 1
    assert agreement.fills[1][5].comm_src == 0 and agreement.fills[1][5].comm_dst == 1
    assert agreement.unpaired == {0: [2]}


def test_group_names_that_are_digits_int_refuses_are_names_not_numbers() -> None:
    """Names "²" (a digit to ``str.isdigit``, not to ``int``) and 5,000 digits (over the
    int-string limit) raised ValueError (issue 30, finding 9); now they are names."""
    for name in ("²", "9" * 5000):
        ranks = [[coll(1, 2, 64, name, pg_size=2)] for _ in range(4)]
        result = agree(ranks)
        assert result.fills == {2: {1: Fill(pg_name="0")}, 3: {1: Fill(pg_name="0")}}
