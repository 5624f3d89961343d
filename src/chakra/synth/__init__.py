"""Synthetic training-step workloads with known ground truth.

:func:`generate_job` writes, per rank, a paired host ET and Kineto trace of a small
transformer's training steps on GPUs, plus the exact ground truth of what happened
(``rank<r>.truth.json``) and the cross-rank collectives (``job.truth.json``).
"""

from typing import TYPE_CHECKING

from chakra import lazy_exports

if TYPE_CHECKING:  # imported on first use (a command's --help loads none of them)
    from chakra.synth.job import JobSummary, RankSummary, SynthError, generate_job
    from chakra.synth.options import (
        VINTAGES,
        SynthOptions,
        SynthOptionsError,
        options_with_vintages,
    )

#: Each public name's module, imported on first use (:func:`chakra.lazy_exports`).
_MODULE_OF = {
    "JobSummary": "job",
    "RankSummary": "job",
    "SynthError": "job",
    "generate_job": "job",
    "VINTAGES": "options",
    "SynthOptions": "options",
    "SynthOptionsError": "options",
    "options_with_vintages": "options",
}
__getattr__ = lazy_exports(__name__, _MODULE_OF)

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
