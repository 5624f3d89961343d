"""docs/user-guide.md runs as written.

Every ```sh block runs in bash (``-e``, so every command of it must succeed) and every
```python block in Python, in the guide's order and in one folder, so that later blocks use
what earlier ones wrote. The folder starts with ``traces/`` holding the 2-rank gloo fixture
(tests/data/pytorch213/gloo_2rank) under the names the guide uses. The guide's command names
(``chakra_pipeline``...) are wrappers in a folder put first on ``PATH``: each calls
the function that pyproject.toml's ``[project.scripts]`` names, with this
checkout's code. A block that cannot run here (torch, a bucket, a scheduler) carries
``<!-- not run by tests: REASON -->`` just before it.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

import chakra
from chakra.et import read_et
from tests.conftest import REPO_ROOT

GUIDE = REPO_ROOT / "docs" / "user-guide.md"
FIXTURE = REPO_ROOT / "tests" / "data" / "pytorch213" / "gloo_2rank"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.S | re.M)
MARKER = re.compile(r"<!-- not run by tests:(.*?)-->\Z", re.S)
RUNNERS = {"sh": ["bash", "-e", "-o", "pipefail", "-c"], "python": [sys.executable, "-c"]}

#: The files each block's text promises, by a piece of text that names the block.
PROMISED = {
    "--device-trace traces/rank0.kineto.json --output-dir from-profile/": [
        "from-profile/workload.0.et", "from-profile/report.json", "from-profile/report.html",
    ],
    "--trace-dir profiles/ --output-dir from-profiles/": [
        "from-profiles/workload.0.et", "from-profiles/workload.1.et",
        "from-profiles/report.json",
    ],
    "chakra_pipeline --trace-dir traces/ --output-dir results/": [
        "results/rank0.et_plus.json", "results/rank1.et_plus.json", "results/workload.0.et",
        "results/workload.1.et", "results/workload.comm_groups.json", "results/report.json",
        "results/timeline.json", "results/utilisation.png", "results/report.html",
    ],
    "chakra_trace_link": [
        "rank0.et_plus.json", "rank0.link.json", "rank1.et_plus.json", "rank1.link.json",
        "job.0.et", "job.1.et", "t.json", "u.png",
    ],
    "--plot-makespans": ["makespans.png"],
    "chakra_trace_info": ["job.0.json", "job.0.dot"],
    "chakra_synth": [
        *(f"synthetic/rank{r}.{kind}.json" for r in range(4) for kind in ("host_et", "kineto")),
        "synthetic-results/report.json", "synthetic-results/workload.3.et",
    ],
    "write_et_plus": ["et_plus.json", "trace.et"],
    "--collapse-gpu": ["window.dot", "around.dot"],
}  # fmt: skip


@dataclass(frozen=True)
class Block:
    """A fenced block of the guide: its language, code, first line (1-based) and the reason
    it is not run (None: it runs)."""

    language: str
    code: str
    line: int
    skipped: Optional[str]


def guide_blocks(text: str) -> list[Block]:
    blocks = []
    for match in FENCE.finditer(text):
        marker = MARKER.search(text[: match.start()].rstrip())
        line = text.count("\n", 0, match.start()) + 1
        skipped = marker[1].strip() if marker else None
        blocks.append(Block(match[1], match[2], line, skipped))
    return blocks


BLOCKS = guide_blocks(GUIDE.read_text())
RUN = [block for block in BLOCKS if block.skipped is None]


def console_scripts() -> dict[str, tuple[str, str]]:
    """``[project.scripts]`` of pyproject.toml: command name -> (module, function)."""
    text = (REPO_ROOT / "pyproject.toml").read_text()
    section = text.split("\n[project.scripts]\n", 1)[1].split("\n[", 1)[0]
    found = re.findall(r'^(\w+) = "([\w.]+):(\w+)"$', section, re.M)
    assert found, "no console scripts found in pyproject.toml"
    return {command: (module, function) for command, module, function in found}


def _prepare(folder: Path) -> dict[str, str]:
    """The fixture's traces under the guide's names, wrappers first on PATH; the env."""
    traces = folder / "traces"
    traces.mkdir(parents=True)
    for packed in FIXTURE.glob("rank*.json.gz"):
        (traces / packed.name[: -len(".gz")]).write_bytes(gzip.decompress(packed.read_bytes()))
    bin_dir = folder.parent / "bin"
    bin_dir.mkdir()
    for command, (module, function) in console_scripts().items():
        wrapper = bin_dir / command
        call = (
            f"import sys; sys.argv[0] = {command!r}; from {module} import {function}; {function}()"
        )
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c "{call}" "$@"\n')
        wrapper.chmod(0o755)
    source = str(Path(chakra.__file__).resolve().parents[1])  # the code under test
    path = os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")])
    python_path = os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PATH": path, "PYTHONPATH": python_path, "MPLBACKEND": "Agg"}


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    """Every block that runs, in order, in one folder: the folder and each block's result."""
    folder = tmp_path_factory.mktemp("guide") / "work"
    env = _prepare(folder)
    results = []
    for block in RUN:
        results.append(
            subprocess.run(
                [*RUNNERS[block.language], block.code],
                cwd=folder,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
        )
    return folder, results  # fmt: skip


def test_every_block_runs_or_says_why_not() -> None:
    assert len(BLOCKS) == GUIDE.read_text().count("\n```") // 2  # no fence missed
    for block in BLOCKS:
        if block.skipped is None:
            assert block.language in RUNNERS, f"line {block.line}: ```{block.language}"
        else:
            assert len(block.skipped) > 10, f"line {block.line}: say why it is not run"
    assert [block.skipped is None for block in BLOCKS].count(False) >= 2  # torch, S3 + Dask
    assert sum(block.language == "sh" for block in RUN) >= 5
    assert any(block.language == "python" for block in RUN)
    for key in PROMISED:  # each names exactly one block, and every block has its promises
        assert sum(key in block.code for block in RUN) == 1, key
    for block in RUN:
        assert any(key in block.code for key in PROMISED), f"line {block.line}: outputs?"


def _check_output(path: Path) -> None:
    """``path`` exists and holds what its name says."""
    assert path.is_file(), path
    if path.suffix == ".png":
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path
    elif path.suffix == ".json":
        json.loads(path.read_text())
    elif path.suffix == ".et":
        assert len(read_et(path)[1]) > 10, path
    elif path.suffix == ".dot":
        assert path.read_text().startswith("digraph"), path
    elif path.suffix == ".html":
        assert path.read_text().lstrip().lower().startswith("<!doctype html>"), path


@pytest.mark.parametrize("index", range(len(RUN)), ids=[f"line{b.line}" for b in RUN])
@pytest.mark.slow
def test_block_succeeds_and_writes_what_it_promises(ran: tuple[Path, list], index: int) -> None:
    folder, results = ran
    block, result = RUN[index], results[index]
    assert result.returncode == 0, f"line {block.line}:\n{block.code}\n{result.stderr[-3000:]}"
    assert "Traceback" not in result.stderr
    for key, outputs in PROMISED.items():
        if key in block.code:
            for name in outputs:
                _check_output(folder / name)


@pytest.mark.slow
def test_what_the_blocks_print(ran: tuple[Path, list]) -> None:
    folder, results = ran
    printed = {block.code: result.stdout for block, result in zip(RUN, results)}
    pipeline = next(out for code, out in printed.items() if "--trace-dir traces/" in code)
    lines = pipeline.splitlines()  # the job's lines first, then the rank table
    assert lines[0].startswith("job: 2 ranks, makespan ")
    table = next(k for k, line in enumerate(lines) if line.startswith("rank  "))
    assert [line.split()[0] for line in lines[table : table + 3]] == ["rank", "0", "1"]
    simulated = next(out for code, out in printed.items() if "--compare --plot" in code)
    assert "rank 0 (job.0.et): simulated" in simulated
    assert "rank 1 (job.1.et): simulated" in simulated
    what_if = next(out for code, out in printed.items() if "--plot-makespans" in code)
    assert what_if.startswith("--scale compute=0.5: ") and "what-if makespan" in what_if
    report = json.loads((folder / "results" / "report.json").read_text())
    assert [rank["rank"] for rank in report["ranks"]] == [0, 1]
    assert "ops · ids " in (folder / "window.dot").read_text()  # GPU runs folded
