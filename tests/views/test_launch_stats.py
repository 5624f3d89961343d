"""Kernel launch statistics on a hand-made graph whose every figure is worked out by hand."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from chakra.views.launch_stats import MeasuredLaunches, launch_stats, launches
from tests.simulate.test_engine import node
from tests.views.test_views import delay, run


def timed(out: Any, start_us: int, name: str = "") -> Any:
    out.start_time_micros = start_us
    if name:
        out.name = name
    return out


def launched_graph() -> list:
    # cpu 1 (measured 100-110) launches kernel 2 directly (stream 7, measured start 112) and
    # kernel 6 through a 15 µs [delay] (stream 9, measured start 130); both are named "k".
    # Simulated: cpu 0-10, kernel 2 at 10 (delay 0), [delay] 10-25, kernel 6 at 25 (15)
    return [
        timed(node(1, 10), 100),
        timed(node(2, 30, (1,), stream=7), 112, "k"),
        timed(delay(5, 15, (1,)), 110),
        timed(node(6, 10, (5,), stream=9), 130, "k"),
    ]


def test_launch_delays_measured_and_simulated() -> None:
    result = run(launched_graph())
    found = launches(result, 0)
    assert found.nodes.tolist() == [1, 3]  # kernels 2 and 6, by position
    assert found.simulated_us.tolist() == [10, 10] and found.measured_us.tolist() == [110, 110]
    (stat,) = launch_stats(result, 0)
    assert (stat.name, stat.count) == ("k", 2)
    assert stat.gpu_simulated_us == stat.gpu_measured_us == 20  # (30 + 10) / 2
    assert stat.delay_simulated_us == pytest.approx(7.5)  # (0 + 15) / 2
    assert stat.delay_measured_us == pytest.approx(11)  # (2 + 20) / 2
    assert (stat.max_delay_simulated_us, stat.max_delay_measured_us) == (15, 20)
    # no ET+: the launch call's duration is unknown
    assert stat.launch_call_us is None and stat.delay_after_call_measured_us is None


def test_the_et_plus_launch_calls_give_call_durations_and_exact_times() -> None:
    result = run(launched_graph())
    # kernel 6's call began at 110.5 and took 3 µs; the kernel began at 130.25
    calls = MeasuredLaunches(np.array([6]), np.array([110.5]), np.array([3.0]),
                             np.array([130.25]))  # fmt: skip
    (stat,) = launch_stats(result, 0, calls)
    assert stat.launch_call_us == 3
    assert stat.delay_measured_us == pytest.approx((2 + 19.75) / 2)
    assert stat.delay_after_call_measured_us == pytest.approx(19.75 - 3)
    assert stat.delay_after_call_simulated_us == pytest.approx(15 - 3)


def test_host_ops_and_unlaunched_kernels_have_no_launch() -> None:
    # a kernel with no host predecessor (only another kernel) is not counted
    result = run([node(1, 10, stream=7), node(2, 5, (1,), stream=8), node(3, 4)])
    assert launch_stats(result, 0) == []
