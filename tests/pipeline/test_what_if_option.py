"""``chakra_pipeline --what-if / --no-what-if / --no-html`` on the 2-rank gloo recording:
the scenarios land in report.json and report.html, a bad one is a usage error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.views.page_checks import check_page_numbers

GLOO = REPO_ROOT / "tests" / "data" / "pytorch213" / "gloo_2rank"


def pipeline(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "chakra.cli.pipeline", "--trace-dir", str(GLOO), "--no-plot"]
    return subprocess.run([*command, *args], capture_output=True, text=True, check=False)


def test_what_if_scenarios_of_ones_own(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = pipeline("--output-dir", str(out), "--what-if", "comm half=comm=0.5",
                    "--what-if", "GPU <2x>=gpu=0.5,comm=2")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "report.json and report.html (open in a browser)" in done.stdout
    assert "what-if 'GPU <2x>' skipped: gpu=0.5 matches no node" in done.stderr  # CPU only
    report = json.loads((out / "report.json").read_text())
    comm, gpu = report["what_if"]
    assert (comm["name"], comm["rules"], comm["note"]) == ("comm half", ["comm=0.5"], None)
    for rank, entry in zip(comm["ranks"], report["ranks"]):
        replay = entry["simulation"]["simulated_makespan_us"]
        assert rank["replay_makespan_us"] == replay and 0 < rank["makespan_us"] < replay
        assert rank["change_pct"] == 100 * (rank["makespan_us"] - replay) / replay
    assert gpu["ranks"] == [] and gpu["nodes_matched"] == [0, 18]
    page = (out / "report.html").read_text()
    check_page_numbers(page, report)
    assert "GPU &lt;2x&gt;" in page and "skipped: gpu=0.5 matches no node" in page


def test_no_what_if_and_no_html(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = pipeline("--output-dir", str(out), "--no-what-if", "--no-html")
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "report.json").read_text())["what_if"] == []
    assert not (out / "report.html").exists() and "report.html" not in done.stdout


@pytest.mark.slow
def test_a_bad_what_if_is_a_usage_error(tmp_path: Path) -> None:
    for args in (["--what-if", "gpu=0.5"], ["--what-if", "x=gpu=-1"],
                 ["--what-if", "x=gpu=1", "--no-what-if"],
                 ["--what-if", "x=gpu=1", "--what-if", "x=comm=1"]):  # fmt: skip
        out = tmp_path / "out"
        done = pipeline("--output-dir", str(out), *args)
        assert done.returncode == 2, (args, done.stderr)
        errors = [line for line in done.stderr.splitlines() if "error" in line]
        assert len(errors) == 1 and errors[0].startswith("chakra_pipeline: error: "), done.stderr
        assert "Traceback" not in done.stderr and not out.exists()
    assert errors[0].endswith("--what-if: scenario 'x' is given twice")
