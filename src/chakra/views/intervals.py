"""Unions of time intervals, as sorted disjoint arrays: what the views measure time with.

Each function takes parallel arrays of starts and ends (µs); empty and negative intervals
count for nothing. Cost: one sort, O(n log n)."""

from __future__ import annotations

import numpy as np

EMPTY = np.zeros(0, dtype=np.float64)


def union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The disjoint intervals covering the same time as ``starts[i]:ends[i]``, sorted."""
    keep = ends > starts
    begins, finishes = starts[keep], ends[keep]
    if not len(begins):
        return EMPTY, EMPTY
    order = np.argsort(begins, kind="stable")
    begins, finishes = begins[order], finishes[order]
    reach = np.maximum.accumulate(finishes)
    first = np.flatnonzero(np.r_[True, begins[1:] > reach[:-1]])
    last = np.r_[first[1:] - 1, len(begins) - 1]
    return begins[first], reach[last]


def covered(starts: np.ndarray, ends: np.ndarray) -> float:
    """The time (µs) during which at least one interval runs."""
    begins, finishes = union(starts, ends)
    return float((finishes - begins).sum())
