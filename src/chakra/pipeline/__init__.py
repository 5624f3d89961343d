"""The whole pipeline for one or many ranks: link -> convert -> simulate, outputs in one folder."""

from typing import TYPE_CHECKING

from chakra import lazy_exports

if TYPE_CHECKING:  # imported on first use (a command's --help loads none of them)
    from chakra.pipeline.inputs import ranks_in_folder
    from chakra.pipeline.run import PipelineResult, RankFiles, run_pipeline

#: Each public name's module, imported on first use (:func:`chakra.lazy_exports`).
_MODULE_OF = {
    "ranks_in_folder": "inputs",
    "PipelineResult": "run",
    "RankFiles": "run",
    "run_pipeline": "run",
}
__getattr__ = lazy_exports(__name__, _MODULE_OF)

__all__ = ["PipelineResult", "RankFiles", "ranks_in_folder", "run_pipeline"]
