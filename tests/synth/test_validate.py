"""The validator notices when a file breaks an invariant (so a clean result means something)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest

from chakra.synth import SynthOptions, generate_job
from chakra.synth.invariants import validate_job


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("job")
    generate_job(SynthOptions(seed=7, ranks=2, ops_per_step=40), folder)
    assert validate_job(folder) == ()
    return folder


def _late_gpu_op(truth: dict) -> None:
    op = truth["gpu_ops"][3]
    op["ts_us"] -= 1000.0


def _wrong_edge(truth: dict) -> None:
    edge = next(e for e in truth["edges"] if e["kind"] == "stream_order")
    edge["src"], edge["dst"] = edge["dst"], edge["src"]


def _collective_end(job_truth: dict) -> None:
    job_truth["collectives"][0]["end_us"] += 0.5


def _nesting(kineto: dict) -> None:
    op = next(e for e in kineto["traceEvents"] if e.get("name") == "aten::addmm")
    op["dur"] += 10_000.0


def _rf_id(host_et: dict) -> None:
    node = next(n for n in host_et["nodes"] if n["name"] == "aten::addmm")
    node["attrs"][0]["value"] += 1


CASES: dict[str, tuple[str, Callable[[dict], None], str]] = {
    "gpu op before its launch": ("rank0.truth.json", _late_gpu_op, "differs from its Kineto"),
    "reversed edge": ("rank0.truth.json", _wrong_edge, "does not hold"),
    "collective end": ("job.truth.json", _collective_end, "does not end at end_us"),
    "crossing ops": ("rank1.kineto.json", _nesting, "crosses"),
    "rf_id mismatch": ("rank1.host_et.json", _rf_id, "differs from its host ET node"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_tampering_is_reported(job: Path, tmp_path: Path, case: str) -> None:
    name, tamper, expected = CASES[case]
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in job.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    data = json.loads((copy / name).read_text())
    tamper(data)
    (copy / name).write_text(json.dumps(data))
    problems = validate_job(copy)
    assert any(expected in problem for problem in problems), problems
