"""Synthetic training-step workloads with known ground truth.

:func:`generate_job` writes, per rank, a paired host ET and Kineto trace of a small
transformer's training steps on GPUs, plus the exact ground truth of what happened
(``rank<r>.truth.json``) and the cross-rank collectives (``job.truth.json``).
"""

from chakra.synth.job import JobSummary, RankSummary, SynthError, generate_job
from chakra.synth.options import VINTAGES, SynthOptions, SynthOptionsError, options_with_vintages

__all__ = [
    "VINTAGES",
    "JobSummary",
    "RankSummary",
    "SynthError",
    "SynthOptions",
    "SynthOptionsError",
    "generate_job",
    "options_with_vintages",
]
