"""Two runs simulated and compared (:func:`chakra.views.run_diff.diff_runs`): what
``chakra_diff`` and :meth:`chakra.analysis.Analysis.diff` show."""

from __future__ import annotations

from collections.abc import Sequence

from chakra.analysis.runs import RunPaths, run_files
from chakra.simulate import ScaleRule, SimOptions, SimResult, simulate_files
from chakra.simulate.replay import what_if_of
from chakra.views.run_diff import RunDiff, diff_runs


def simulate_run(paths: RunPaths) -> SimResult:
    """The replay of a run (:func:`chakra.analysis.runs.run_files` says what a run is)."""
    return simulate_files(run_files(paths).graphs, options=SimOptions(explain=False))


def compare_runs(a: RunPaths, b: RunPaths) -> RunDiff:
    """Run ``a`` against run ``b``, both replayed."""
    return diff_runs(simulate_run(a), simulate_run(b))


def compare_what_if(a: RunPaths, rules: Sequence[ScaleRule]) -> RunDiff:
    """Run ``a`` against its what-if under ``rules``. Raises ChakraError for a rule that
    matches no node."""
    replay = simulate_run(a)
    return diff_runs(replay, what_if_of(replay, rules))
