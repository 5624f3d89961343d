"""Choosing the Kineto window a host ET's op names align with best."""

from __future__ import annotations

from chakra.link.alignment import BestWindows, align_from, best_windows

STEP = ["step", "a", "b", "c", "d", "e", "f", "g", "h"]


def test_equal_iterations_are_all_best_and_in_order() -> None:
    kineto = ["warmup", *STEP, *STEP, "x", *STEP]
    assert best_windows(STEP, kineto) == BestWindows(score=9, starts=(1, 10, 20))
    assert align_from(STEP, kineto, 10).pairs == tuple((i, 10 + i) for i in range(9))


def test_a_window_missing_an_op_loses_to_a_whole_one() -> None:
    host = [*STEP, "i"]
    kineto = [*STEP, *["z"] * 40, *host]  # "i" is beyond the lookahead of the first window
    assert best_windows(host, kineto) == BestWindows(score=10, starts=(49,))


def test_without_an_anchor_the_start_is_aligned_or_nothing() -> None:
    # no candidate holds the anchor b, a, c: aligned from 0, skipping a and z
    assert best_windows(["b", "a", "c"], ["a", "z", "b", "a"]) == BestWindows(2, (0,))
    assert best_windows(["q"], ["a", "b"]) is None
