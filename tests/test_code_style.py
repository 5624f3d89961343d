"""The code base is ruff-clean: lint rules and formatting (configured in pyproject.toml)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

PATHS = ["src", "tests", "schema", "benchmarks", "ci_tools"]

pytestmark = pytest.mark.skipif(
    os.environ.get("CHAKRA_PROTOBUF_MATRIX_RUN") == "1", reason="ruff is only in the main env"
)


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]])
def test_ruff(command: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *command, *PATHS],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
