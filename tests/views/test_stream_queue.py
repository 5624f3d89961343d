"""Stream queue length on a hand-made graph whose series is worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from chakra.views.stream_queue import queue_series, rank_queue_lengths
from tests.simulate.test_engine import node
from tests.views.test_launch_stats import timed
from tests.views.test_views import run


def test_queue_length_of_one_stream_simulated_and_measured() -> None:
    # cpu 1 (0-10) launches kernels 2 (30 µs) and 3 (20 µs) on stream 7; cpu 4 (10-15)
    # launches kernel 5 (10 µs) there too. Simulated: 2 at 10-40, 3 at 40-60, 5 at 60-70;
    # the queue: 2 from 10, 3 from 15, then 2, 1, 0 at 40, 60, 70. Measured: the same
    # shifted by 100 µs.
    graph = [timed(node(1, 10), 100), timed(node(2, 30, (1,), stream=7), 110),
             timed(node(3, 20, (1,), stream=7), 140), timed(node(4, 5, (1,)), 110),
             timed(node(5, 10, (4,), stream=7), 160)]  # fmt: skip
    simulated, measured = rank_queue_lengths(run(graph), 0)
    expected = ("simulated", "device 0 stream 7", 3)
    assert (simulated.source, simulated.stream, simulated.kernels) == expected
    assert simulated.times_us == [10, 15, 40, 60, 70] and simulated.lengths == [2, 3, 2, 1, 0]
    assert simulated.max_length == 3 and simulated.mean_length == pytest.approx(1.6)
    # (2 * 5 + 3 * 25 + 2 * 20 + 1 * 10) / 60
    assert simulated.time_weighted_length == pytest.approx(135 / 60)
    assert measured.source == "measured" and measured.lengths == simulated.lengths
    assert measured.times_us == [t + 100 for t in simulated.times_us]


def test_a_kernel_ending_as_another_joins_counts_once() -> None:
    times, lengths = queue_series(np.array([0.0, 5.0]), np.array([5.0, 9.0]))
    assert times.tolist() == [0, 5, 9] and lengths.tolist() == [1, 1, 0]


def test_without_measured_starts_only_the_simulated_queue() -> None:
    (only,) = rank_queue_lengths(run([node(1, 10), node(2, 5, (1,), stream=7)]), 0)
    assert only.source == "simulated" and only.lengths == [1, 0]
