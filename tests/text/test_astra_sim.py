"""Every text workload type, converted for a few NPUs, runs to completion in the real ASTRA-sim
(``../shared/tools/astra-sim/run.py``), with both analytical backends.

The workloads are ``tests/data/text_workloads/<TYPE>.txt``, one per :class:`Parallelism`
type, each using every comm type (``NONE`` too). Two passes, so that a pass waits for the
previous one. The negative tests show that the check can fail: the same files with a
dependency cycle, or with a ``pg_name`` ASTRA-sim cannot parse, are not run to completion.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra.et import Node, read_et, set_attr, write_et
from chakra.text import Parallelism, convert_text
from tests.conftest import REPO_ROOT, AstraSim, assert_astra_sim_ran_all

WORKLOADS = REPO_ROOT / "tests" / "data" / "text_workloads"
#: ASTRA-sim's analytical ring needs 2 NPUs, its congestion-aware ring at least 3.
NPU_COUNTS = (3, 8)
BACKENDS = {"unaware": (), "aware": ("--aware",)}


def convert(parallelism: Parallelism, prefix: Path, num_npus: int) -> list[Path]:
    return convert_text(WORKLOADS / f"{parallelism.value}.txt", prefix, num_npus, num_passes=2)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("num_npus", NPU_COUNTS)
@pytest.mark.parametrize("parallelism", list(Parallelism), ids=lambda p: p.value)
@pytest.mark.slow
def test_every_workload_type_runs_in_astra_sim(
    astra_sim: AstraSim, tmp_path: Path, parallelism: Parallelism, num_npus: int, backend: str
) -> None:
    prefix = tmp_path / parallelism.value.lower()
    convert(parallelism, prefix, num_npus)
    verdict = astra_sim.run(prefix, *BACKENDS[backend])
    assert_astra_sim_ran_all(verdict)
    assert len(verdict["ranks"]) == num_npus
    assert all(rank["nodes"] > 0 for rank in verdict["ranks"])


def _rewrite(path: Path, change) -> None:
    """Apply ``change(nodes)`` to the nodes of ``path`` and write it back."""
    metadata, nodes = read_et(path)
    change(nodes)
    write_et(path, metadata, nodes)


def _add_cycle(nodes: list[Node]) -> None:
    """The second pass's first node also waits for the last node, which follows it: the
    first pass runs, then nothing is ready (ASTRA-sim can end such a run quietly)."""
    nodes[len(nodes) // 2].data_deps.append(nodes[-1].id)


def _bad_pg_name(nodes: list[Node]) -> None:
    """Every collective names its process group ``"tp"`` (std::stoi cannot parse it)."""
    for node in nodes:
        if node.name.startswith("COMM_COLL_NODE"):
            set_attr(node, "pg_name", "tp")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("fault", "problem"),
    [(_add_cycle, "never issued"), (_bad_pg_name, "swallowed an exception")],
    ids=["cycle", "pg_name"],
)
def test_a_broken_workload_is_caught(
    astra_sim: AstraSim, tmp_path: Path, fault, problem: str, backend: str
) -> None:
    prefix = tmp_path / "data"
    for path in convert(Parallelism.DATA, prefix, 3):
        _rewrite(path, fault)
    verdict = astra_sim.run(prefix, *BACKENDS[backend])
    assert verdict["ok"] is False
    assert all(0 < rank["issued"] < rank["nodes"] for rank in verdict["ranks"]), verdict
    assert any(problem in line for line in verdict["problems"]), verdict["problems"]
