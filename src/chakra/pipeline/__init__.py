"""The whole pipeline for one or many ranks: link -> convert -> simulate, outputs in one folder."""

from chakra.pipeline.inputs import ranks_in_folder
from chakra.pipeline.run import PipelineResult, RankFiles, run_pipeline

__all__ = ["PipelineResult", "RankFiles", "ranks_in_folder", "run_pipeline"]
