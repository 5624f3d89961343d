"""The whole pipeline for one or many ranks: link -> convert -> simulate, outputs in one folder."""

from chakra.pipeline.run import PipelineResult, RankFiles, run_pipeline

__all__ = ["PipelineResult", "RankFiles", "run_pipeline"]
