"""Analyses of whole runs, for notebooks and ``chakra_diff``: :class:`Analysis` (every table
of ``report.html`` and the HTA-style views as pandas DataFrames; pandas is the optional
extra ``chakra[notebook]``) and the comparison of two runs (:func:`compare_runs`,
:func:`compare_what_if`)."""

from chakra.analysis.compare import compare_runs, compare_what_if, simulate_run
from chakra.analysis.facade import Analysis
from chakra.analysis.runs import RunFiles, run_files

__all__ = ["Analysis", "RunFiles", "compare_runs", "compare_what_if", "run_files", "simulate_run"]
