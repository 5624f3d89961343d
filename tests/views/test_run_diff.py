"""Two runs compared: names ranked by the change of their total time, the critical path."""

from __future__ import annotations

import pytest

from chakra.errors import DiffError
from chakra.simulate import ScaleRule
from chakra.simulate.replay import what_if_of
from chakra.views.run_diff import KERNEL, diff_runs
from tests.simulate.test_engine import node
from tests.views.test_views import run


def test_a_what_if_shows_the_scaled_kernel_first() -> None:
    # cpu 1 (10) launches kernel 2 (50) and kernel 3 (20) on two streams; cpu 4 waits for both
    graph = [node(1, 10), node(2, 50, (1,), stream=7), node(3, 20, (1,), stream=8),
             node(4, 5, (2, 3))]  # fmt: skip
    replay = run(graph)
    faster = what_if_of(replay, [ScaleRule.parse("n2=0.5")])
    found = diff_runs(replay, faster)
    (change,) = found.names  # only n2 changed
    assert (change.name, change.kind, change.total_a_us, change.total_b_us) == (
        "n2",
        KERNEL,
        50,
        25,
    )
    assert change.change_us == -25 and change.change_pct == pytest.approx(-50)
    path = {p.kind: p for p in found.path}
    assert (path["makespan"].a_us, path["makespan"].b_us) == (65, 40)
    assert (path["gpu"].a_us, path["gpu"].b_us) == (50, 25)


def test_names_present_in_one_run_only_are_changes() -> None:
    a = run([node(1, 10), node(2, 7)])
    b = run([node(1, 10)])
    (change,) = diff_runs(a, b).names
    assert (change.name, change.count_a, change.count_b, change.change_pct) == ("n2", 1, 0, -100)


def test_runs_with_different_ranks_are_refused() -> None:
    with pytest.raises(DiffError, match="1 and 2 ranks"):
        diff_runs(run([node(1, 10)]), run([node(1, 10)], [node(1, 10)]))
