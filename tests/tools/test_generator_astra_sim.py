"""Every family ``chakra_generator`` writes by default runs to completion in the real ASTRA-sim
(``../shared/tools/astra-sim/run.py``), with both analytical backends and a few NPU counts;
each family only ``--all-families`` writes fails there, for the reason its ``Family`` gives.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra.tools.generator import FAMILIES, GeneratorOptions, generate
from tests.conftest import AstraSim, assert_astra_sim_ran_all

#: ASTRA-sim's analytical ring needs 2 NPUs, its congestion-aware ring at least 3; 3 makes
#: the send/recv ring odd, 4 even.
NPU_COUNTS = (3, 4)
BACKENDS = {"unaware": (), "aware": ("--aware",)}
RUNNABLE = [family.name for family in FAMILIES if not family.astra_sim_cannot_run]
#: run.py options a family needs: memory nodes need a remote memory model.
RUN_OPTIONS = {
    "one_remote_mem_load_node": ("--memory", "per-npu"),
    "one_remote_mem_store_node": ("--memory", "per-npu"),
}
#: What run.py reports for each family ASTRA-sim cannot run.
EXPECTED_PROBLEMS = {
    "one_metadata_node_all_types": "failed an assertion",  # Statistics.cc: no METADATA case
    "BARRIER": "Unsupported collective comm type",
    "one_comm_recv_node": "never finished",  # the receive waits for a send that never comes
}


@pytest.fixture(scope="module", params=NPU_COUNTS, ids=lambda n: f"{n}npus")
def generated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every family (``all_families``) for ``request.param`` NPUs, in one folder."""
    folder = tmp_path_factory.mktemp(f"generated{request.param}")
    generate(GeneratorOptions(num_npus=request.param, all_families=True), folder)
    return folder


def test_the_expectations_name_real_families() -> None:
    names = {family.name for family in FAMILIES}
    assert set(RUN_OPTIONS) <= set(RUNNABLE)
    assert set(EXPECTED_PROBLEMS) == names - set(RUNNABLE)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("family", RUNNABLE)
@pytest.mark.slow
def test_every_default_family_runs_in_astra_sim(
    astra_sim: AstraSim, generated: Path, family: str, backend: str
) -> None:
    options = (*RUN_OPTIONS.get(family, ()), *BACKENDS[backend])
    verdict = astra_sim.run(generated / family, *options)
    assert_astra_sim_ran_all(verdict)
    assert len(verdict["ranks"]) == len(list(generated.glob(f"{family}.*.et")))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("family", sorted(EXPECTED_PROBLEMS))
def test_families_astra_sim_cannot_run_fail_for_their_reason(
    astra_sim: AstraSim, generated: Path, family: str, backend: str
) -> None:
    verdict = astra_sim.run(generated / family, *BACKENDS[backend])
    assert verdict["ok"] is False
    expected = EXPECTED_PROBLEMS[family]
    assert any(expected in line for line in verdict["problems"]), verdict["problems"]
