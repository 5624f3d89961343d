"""A small synthetic 2-rank GPU job through the pipeline, shared by the façade's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra.pipeline import RankFiles, run_pipeline
from chakra.synth import SynthOptions, generate_job


@pytest.fixture(scope="session")
def pipeline_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The output folder of ``chakra_pipeline`` on 2 synthetic ranks (kernels, NCCL, copies)."""
    folder = tmp_path_factory.mktemp("analysis")
    traces = folder / "traces"
    generate_job(SynthOptions(seed=1, ranks=2, steps=1, ops_per_step=70), traces)
    ranks = [RankFiles(r, traces / f"rank{r}.host_et.json", traces / f"rank{r}.kineto.json")
             for r in (0, 1)]  # fmt: skip
    return run_pipeline(ranks, folder / "out", plot=False).output_dir
