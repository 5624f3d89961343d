"""The README's Python examples (its "Library" section: the public API of each stage) run
as written, in order, in one folder holding the files they name: ``rank0.host_et.json.gz``
and ``rank0.kineto.json.gz`` (rank 0 of the 2-rank gloo fixture) and ``trace.et.gz`` (that
rank linked and converted)."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chakra.convert import convert_file
from chakra.link import LinkOptions
from chakra.link.batch import link_files
from tests.conftest import REPO_ROOT
from tests.test_user_guide import FIXTURE, _prepare, guide_blocks

README = REPO_ROOT / "README.md"
PYTHON = [b for b in guide_blocks(README.read_text()) if b.language == "python"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    work = tmp_path_factory.mktemp("readme") / "work"
    env = _prepare(work)
    for name in ("rank0.host_et.json.gz", "rank0.kineto.json.gz"):
        shutil.copy(FIXTURE / name, work / name)
    linked = work / "linked.json"
    link_files(FIXTURE / "rank0.host_et.json.gz", FIXTURE / "rank0.kineto.json.gz", linked,
               LinkOptions())  # fmt: skip
    convert_file(linked, work / "trace.et")
    (work / "trace.et.gz").write_bytes(gzip.compress((work / "trace.et").read_bytes()))
    return work, env


def test_the_readme_has_python_examples_of_every_stage() -> None:
    code = "\n".join(block.code for block in PYTHON)
    for package in ("chakra.et", "chakra.ingest", "chakra.link", "chakra.convert",
                    "chakra.simulate"):  # fmt: skip
        assert f"from {package} import" in code, package


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(PYTHON)), ids=[f"line{b.line}" for b in PYTHON])
def test_readme_example_runs(folder: tuple[Path, dict[str, str]], index: int) -> None:
    work, env = folder
    block = PYTHON[index]
    result = subprocess.run([sys.executable, "-c", block.code], cwd=work, env=env,
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, f"README line {block.line}:\n{block.code}\n{result.stderr}"
    assert "Traceback" not in result.stderr
