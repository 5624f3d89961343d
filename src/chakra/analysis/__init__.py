"""Analyses of whole runs, for notebooks and ``chakra_diff``: :class:`Analysis` (tables as
pandas DataFrames; pandas is the optional extra ``chakra[notebook]``) and the comparison of
two runs (:func:`compare_runs`, :func:`compare_what_if`)."""

from chakra.analysis.compare import compare_runs, compare_what_if, simulate_run
from chakra.analysis.runs import RunFiles, run_files

__all__ = ["RunFiles", "compare_runs", "compare_what_if", "run_files", "simulate_run"]
