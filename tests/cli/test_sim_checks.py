"""``chakra_sim`` refuses a graph ``chakra_validate --no-astra-sim`` rejects: exit 1 and one
line naming the file, the rank, the first problem and a count per kind; ``--lenient``
simulates it with one warning that counts each kind and says what was done about it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from chakra.et.graph_checks import validate_et
from chakra.simulate.load_checks import SIM_CHECKS
from tests.cli.conftest import Runner
from tests.cli.test_sim import sim
from tests.simulate.test_load_checks import CASES, KINDS, node, write


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("resources", ["threads-streams", "astra-sim"])
def test_each_problem_kind_is_refused_in_one_line(
    cli: Runner, tmp_path: Path, case: str, resources: str
) -> None:
    path = write(tmp_path / f"{case}.et", CASES[case]())
    first = validate_et(path, SIM_CHECKS).problems[0].message
    (kind,) = KINDS[case]
    outcome = cli("sim", path, "--resources", resources)
    outcome.one_line(1, f"chakra_sim: error: {path}: rank 0: the graph fails chakra_validate's"
                     f" checks (1 {kind}); first: {first};", "--lenient")  # fmt: skip
    assert outcome.stdout == ""


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The warnings logged (in this process, pytest's handler gets them, not stderr)."""
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("case", list(CASES))
def test_each_problem_kind_is_simulated_with_lenient(
    cli: Runner, tmp_path: Path, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path / f"{case}.et", CASES[case]())
    outcome = cli("sim", path, "--lenient")
    assert outcome.status == 0, outcome.errors
    (line,) = warnings_of(caplog)
    assert line.startswith(f"{path}: rank 0: simulating a graph that fails chakra_validate's"
                           " checks (--lenient): ")  # fmt: skip
    assert " 1 " in line and "first: " in line
    assert f"rank 0 ({path}): simulated " in outcome.stdout


def test_what_lenient_says_it_did(tmp_path: Path) -> None:
    """As the user sees it: one WARNING line on stderr, exit 0."""
    path = write(tmp_path / "g.et", [node(1, ctrl=(2,)), node(2, deps=(1, 2, 9))])
    result = sim(str(path), "--lenient")
    assert result.returncode == 0, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"chakra_sim: WARNING: {path}: rank 0: simulating")
    for said in ("ignored 1 data deps on ids no node has", "ignored 1 self-dependencies",
                 "kept 1 dependency cycles (the replay waits on data_deps only"):  # fmt: skip
        assert said in line


def test_a_data_cycle_still_cannot_run_with_lenient(
    cli: Runner, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path / "g.et", [node(1, deps=(2,)), node(2, deps=(1,))])
    outcome = cli("sim", path, "--lenient")
    outcome.one_line(1, f"{path}: rank 0: 2 nodes never ran")
    assert "kept 1 dependency cycles" in warnings_of(caplog)[0]


def test_the_reference_feeder_trace(
    cli: Runner, shared_traces: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The reference's chakra.0.et simulated to 333.7 ms without a word."""
    path = shared_traces / "chakra" / "feeder_trace.et.gz"
    outcome = cli("sim", path)
    outcome.one_line(1, f"{path}: rank 0: the graph fails chakra_validate's checks (1,277"
                     " dangling_ctrl_dep, 383 self_dep, 417 cycle, 28 missing_attr)")  # fmt: skip
    outcome = cli("sim", path, "--lenient")
    assert outcome.status == 0
    (line,) = warnings_of(caplog)
    assert ("ignored 1,277 ctrl deps on ids no node has; ignored 383 self-dependencies; kept 417"
            " dependency cycles") in line  # fmt: skip
    assert "simulated 333,728 us" in outcome.stdout
