"""Fixtures of the fuzz suite: the seeds of every format, built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.harness import preload
from tests.fuzz.targets import FIXTURES, MODULES, Seeds, build_seeds


@pytest.fixture(scope="session")
def fuzz_seeds(tmp_path_factory: pytest.TempPathFactory) -> Seeds:
    """Every format's seeds (linked, converted, simulated from the fixtures), with the
    tools' modules imported so that forked runs skip the imports."""
    seeds = build_seeds(tmp_path_factory.mktemp("fuzz-seeds"))
    preload(MODULES)
    return seeds


@pytest.fixture(scope="session")
def base(fuzz_seeds: Seeds) -> dict[str, Path]:
    """Valid inputs to start from: a synthetic 2-rank job, linked and converted."""
    folder = fuzz_seeds.folder
    return {
        "host": folder / "synth" / "rank0.host_et.json",
        "kineto": folder / "synth" / "rank0.kineto.json",
        "et_plus": folder / "synth.0.et_plus.json",
        "et": folder / "synth.0.et",
        "et_peer": folder / "synth.1.et",
        "timeline": folder / "synth.timeline.json",
        "log": folder / "astra_sim.log",
        "gloo_host": FIXTURES / "gloo_2rank" / "rank0.host_et.json.gz",
    }
