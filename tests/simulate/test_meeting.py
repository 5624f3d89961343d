"""When each member of a collective ends (the meeting rule), worked by hand."""

from __future__ import annotations

from chakra.simulate.meeting import member_ends
from chakra.simulate.network import NetworkModel
from chakra.simulate.sim_graph import CommKey, Recorded

KEY = CommKey("0", 0, comm_type=0, size_bytes=1 << 20)


def test_each_member_keeps_its_own_tail_after_the_last_arrival() -> None:
    # the gloo fixture's all_reduce: rank 1 arrived 576 us before rank 0 and recorded
    # 5,093 us; rank 0 recorded 5,598 us. Measured ends: rank 1 at 2,084 + 5,093 = 7,177;
    # rank 0 at 2,660 + 5,598 = 8,258. Replayed from the last arrival (2,660):
    recorded = {0: Recorded(5598.0, 2660.0, 1.0), 1: Recorded(5093.0, 2084.0, 1.0)}
    ends = member_ends(KEY, 2, 2660.0, recorded, None)
    assert ends == {0: 2660.0 + 5598.0, 1: 2660.0 + (5093.0 - 576.0)}
    # arriving later than measured delays both by the same amount
    later = member_ends(KEY, 2, 2760.0, recorded, None)
    assert later == {0: ends[0] + 100, 1: ends[1] + 100}


def test_one_clock_and_whole_microsecond_starts_give_the_shortest_duration() -> None:
    # both ended at 130.4 us; starts truncated to whole microseconds (100.7 -> 100, 120.2 ->
    # 120): the tails 29.7 - 20 = 9.7 and 10.2 differ by less than a microsecond
    recorded = {0: Recorded(29.7, 100.0, 1.0), 1: Recorded(10.2, 120.0, 1.0)}
    ends = member_ends(KEY, 2, 120.0, recorded, None)
    assert ends == {0: 130.2, 1: 130.2}


def test_without_every_measured_start_or_with_a_network_model() -> None:
    recorded = {0: Recorded(40.0, -1.0, 1.0), 1: Recorded(25.0, 10.0, 1.0)}
    assert member_ends(KEY, 2, 50.0, recorded, None) == {0: 75.0, 1: 75.0}
    network = NetworkModel("ring", 100, 5)
    length = network.duration_us(0, 1 << 20, 2)
    assert member_ends(KEY, 2, 50.0, recorded, network) == {0: 50 + length, 1: 50 + length}


def test_a_what_if_scales_the_transfer_not_the_wait() -> None:
    # the all_reduce above with --scale comm=2: durations doubled by the what-if; rank 1's
    # 576 us wait for rank 0 is re-created by the meeting, its 4,517 us transfer doubles
    recorded = {0: Recorded(2 * 5598.0, 2660.0, 2.0), 1: Recorded(2 * 5093.0, 2084.0, 2.0)}
    ends = member_ends(KEY, 2, 2660.0, recorded, None)
    assert ends == {0: 2660.0 + 2 * 5598.0, 1: 2660.0 + 2 * (5093.0 - 576.0)}
    free = {0: Recorded(0.0, 2660.0, 0.0), 1: Recorded(0.0, 2084.0, 0.0)}
    assert member_ends(KEY, 2, 2660.0, free, None) == {0: 2660.0, 1: 2660.0}
