"""The package installs and its ET tests pass with every supported protobuf runtime.

Each case builds a fresh virtual environment, runs ``pip install .`` of this source tree with
one protobuf release series pinned, and runs the ET, file and CLI tests inside it. It needs
the package index (or a warm pip cache), so it is marked ``slow``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

#: The oldest supported series, the newest release of each later major, the newest overall.
RUNTIMES = ["4.21.*", "5.*", "6.*", "7.*"]
INNER_TESTS = ["tests/et", "tests/fileio", "tests/cli"]


def run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stdout}\n{result.stderr}"
    return result


def copy_source_tree(destination: Path) -> Path:
    """Copy what ``pip install .`` needs, so that building leaves the checkout untouched."""
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO_ROOT / name, destination / name)
    shutil.copytree(
        REPO_ROOT / "src", destination / "src", ignore=shutil.ignore_patterns("*.egg-info")
    )
    return destination


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("CHAKRA_PROTOBUF_MATRIX_RUN") == "1", reason="already inside the matrix"
)
@pytest.mark.parametrize("series", RUNTIMES)
def test_et_tests_pass_in_fresh_venv(series: str, tmp_path: Path) -> None:
    source = copy_source_tree(tmp_path)
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    # [plot]: the CLI tests draw pictures (matplotlib is an optional extra)
    run([*pip, f"{source}[plot]", f"protobuf=={series}", "pytest", "hypothesis"])
    version = run([python, "-c", "import google.protobuf as p; print(p.__version__)"])
    installed = version.stdout.strip()
    assert installed.startswith(series.rstrip("*")), installed
    env = {**os.environ, "CHAKRA_PROTOBUF_MATRIX_RUN": "1", "PYTHONWARNINGS": "error"}
    result = run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *INNER_TESTS],
        cwd=REPO_ROOT,
        env=env,
    )
    summary = result.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary, summary
    print(f"protobuf {installed}: {summary}")
