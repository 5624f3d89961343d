"""Golden job outputs: a small synthetic job (3 ranks, 2 steps) through ``run_pipeline``
writes ``timeline.json``, ``report.json`` and ``report.html`` byte for byte as the files
committed under ``tests/data/golden/pipeline/`` (gzipped, written by main at 146f042, before
the views were made faster: a faster encoder or a one-pass build must not change a byte).
The same timeline written compressed (``timeline.json.gz``, above ``GZIP_ABOVE_EVENTS``)
holds the same JSON, and its gzip bytes are fixed too (``mtime`` 0, level 6).

Update: ``CHAKRA_UPDATE_GOLDEN=1 python -m pytest tests/pipeline/test_golden_outputs.py``
rewrites them; review why before committing.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path

import pytest

from chakra.pipeline import ranks_in_folder, run_pipeline, timeline_file
from chakra.synth import SynthOptions, generate_job
from tests.conftest import REPO_ROOT

GOLDEN = REPO_ROOT / "tests" / "data" / "golden" / "pipeline"
UPDATE = os.environ.get("CHAKRA_UPDATE_GOLDEN") == "1"
NAMES = ("timeline.json", "report.json", "report.html")


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("golden-job") / "traces"
    generate_job(SynthOptions(seed=3, ranks=3, steps=2, ops_per_step=20), folder)
    return folder


def _check(name: str, written: bytes) -> None:
    packed = name.endswith(".gz")  # kept as written; the others gzipped
    golden = GOLDEN / (f"as_written.{name}" if packed else f"{name}.gz")
    if UPDATE:
        golden.write_bytes(written if packed else gzip.compress(written, 9, mtime=0))
        return
    expected = golden.read_bytes() if packed else gzip.decompress(golden.read_bytes())
    assert len(written) == len(expected), f"{name}: {len(written)} bytes, not {len(expected)}"
    first = next((k for k, (a, b) in enumerate(zip(written, expected)) if a != b), None)
    assert first is None, f"{name} differs at byte {first}: {written[first:first + 80]!r} vs " \
        f"{expected[first:first + 80]!r}"  # fmt: skip


@pytest.mark.parametrize("jobs", [1, 2])  # 2: ranks in workers, the timeline beside the views
def test_job_outputs_match_the_golden_files(traces: Path, tmp_path: Path, jobs: int) -> None:
    out = tmp_path / "out"
    run_pipeline(ranks_in_folder(traces), out, jobs=jobs)
    for name in NAMES:
        _check(name, (out / name).read_bytes())


@pytest.mark.parametrize("jobs", [1, 2])
def test_compressed_timeline_matches_the_golden_file(
    traces: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    monkeypatch.setattr(timeline_file, "GZIP_ABOVE_EVENTS", 10)
    out = tmp_path / "out"
    run_pipeline(ranks_in_folder(traces), out, jobs=jobs, plot=False, html=False)
    assert not (out / "timeline.json").exists()
    packed = (out / "timeline.json.gz").read_bytes()
    _check("timeline.json", gzip.decompress(packed))
    _check("timeline.json.gz", packed)


#: SHA-256 of every file of the job's output folder (timeline and report.html included;
#: no plot), the inputs and outputs named relative to the run's folder: written by main at
#: eb0b734, before the second round of issue 35's speed work (faster linker, converter and
#: pipeline) and checked equal with one worker and with two.
RANK_FILES = GOLDEN / "rank_files.sha256.json"


@pytest.mark.parametrize("jobs", [1, 2])
def test_every_file_of_the_job_matches_its_golden_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    monkeypatch.chdir(tmp_path)  # the ET+ records the input names it was given
    generate_job(SynthOptions(seed=3, ranks=3, steps=2, ops_per_step=20), Path("traces"))
    run_pipeline(ranks_in_folder(Path("traces")), Path("out"), jobs=jobs, plot=False)
    digests = {path.name: hashlib.sha256(path.read_bytes()).hexdigest()
               for path in sorted(Path("out").iterdir())}  # fmt: skip
    if UPDATE:
        RANK_FILES.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
        return
    expected = json.loads(RANK_FILES.read_text())
    assert sorted(digests) == sorted(expected)
    assert {name for name in digests if digests[name] != expected[name]} == set()
