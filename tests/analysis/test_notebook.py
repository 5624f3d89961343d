"""The example notebook (docs/notebooks/analysis.ipynb) runs: its code cells, in order, in
one fresh namespace, in an empty folder; each table it makes is a non-empty DataFrame."""

from __future__ import annotations

import json
from pathlib import Path

import pandas
import pytest

from tests.conftest import REPO_ROOT

NOTEBOOK = REPO_ROOT / "docs" / "notebooks" / "analysis.ipynb"
TABLES = ("summary", "ranks_compared", "path", "segments", "launches", "queues", "copies",
          "what_if", "changed", "path_changes")  # fmt: skip


def code_cells() -> list[str]:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def test_the_example_notebook_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__main__"}
    for number, source in enumerate(code_cells()):
        exec(compile(source, f"{NOTEBOOK.name} cell {number}", "exec"), namespace)
    for name in TABLES:
        table = namespace[name]
        assert isinstance(table, pandas.DataFrame) and not table.empty, name


def test_the_notebook_is_stored_without_outputs() -> None:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in cells if c["cell_type"] == "code")  # fmt: skip
