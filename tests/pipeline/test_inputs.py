"""Finding every rank's traces in one folder: our names, the reference's and PyTorch's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from chakra.errors import ChakraError
from chakra.pipeline import ranks_in_folder
from chakra.synth import SynthOptions, generate_job


@pytest.fixture(scope="module")
def profiler_named_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-rank synthetic job named as PyTorch's tensorboard_trace_handler names traces: the
    only long numbers in the Kineto names are timestamps; rank 1's trace records no rank."""
    folder = tmp_path_factory.mktemp("job")
    generate_job(SynthOptions(seed=1, ranks=2, steps=1, ops_per_step=70), folder)
    for path in folder.glob("*.truth.json"):
        path.unlink()
    (folder / "rank0.kineto.json").rename(folder / "worker0_step_12.1694128201553.pt.trace.json")
    rank1 = json.loads((folder / "rank1.kineto.json").read_text())
    del rank1["distributedInfo"]
    (folder / "worker1_step_12.1694128201554.pt.trace.json").write_text(json.dumps(rank1))
    (folder / "rank1.kineto.json").unlink()
    (folder / "rank0.host_et.json").rename(folder / "worker0_step_12.host_et.json")
    return folder  # rank1.host_et.json keeps its name


def test_profiler_names_pair_by_rank(profiler_named_job: Path) -> None:
    found = [(r.rank, r.host.name, r.device.name) for r in ranks_in_folder(profiler_named_job)]
    assert found == [
        (0, "worker0_step_12.host_et.json", "worker0_step_12.1694128201553.pt.trace.json"),
        (1, "rank1.host_et.json", "worker1_step_12.1694128201554.pt.trace.json"),
    ]


@pytest.mark.slow
def test_the_pipeline_runs_on_profiler_names(profiler_named_job: Path, tmp_path: Path) -> None:
    script = [sys.executable, "-m", "chakra.cli.pipeline"]
    out = tmp_path / "out"
    result = subprocess.run([*script, "--trace-dir", str(profiler_named_job),
                             "--output-dir", str(out)],
                            capture_output=True, text=True, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads((out / "report.json").read_text())
    assert [r["rank"] for r in report["ranks"]] == [0, 1]
    names = {p.name for p in out.iterdir()}
    assert {"workload.0.et", "workload.1.et", "rank0.et_plus.json"} <= names


def test_outputs_beside_the_traces_are_not_taken_for_traces(
    profiler_named_job: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "both"
    folder.mkdir()
    for path in profiler_named_job.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    (folder / "rank0.et_plus.json").write_text(
        '{"schema": "1.1.1", "chakra_link": {}, "nodes": []}'
    )
    (folder / "notes.et.json").write_text('{"traceEvents": []}')  # the word "et", not a host ET
    assert [r.rank for r in ranks_in_folder(folder)] == [0, 1]


def test_two_kineto_traces_of_one_rank(profiler_named_job: Path, tmp_path: Path) -> None:
    folder = tmp_path / "twice"
    folder.mkdir()
    for path in profiler_named_job.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    rank0 = folder / "worker0_step_12.1694128201553.pt.trace.json"
    (folder / "worker0_step_13.1694128209999.pt.trace.json").write_bytes(rank0.read_bytes())
    with pytest.raises(
        ChakraError,
        match=r"two files for rank 0: worker0_step_1\d\.\d+\.pt\."
        r"trace\.json, worker0_step_1\d\.\d+\.pt\.trace\.json",
    ):
        ranks_in_folder(folder)


def test_a_rank_whose_host_trace_is_not_one_is_named(
    profiler_named_job: Path, tmp_path: Path
) -> None:
    """Rank 0's host-named file holds only blanks while rank 1 has its host ET: the error
    names that file (it named only the folder: "ranks [0] have a Kineto trace but no host
    trace"; fuzzing found it through chakra_pipeline --trace-dir -j 2)."""
    folder = tmp_path / "blank"
    folder.mkdir()
    for path in profiler_named_job.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    (folder / "worker0_step_12.host_et.json").write_text("  \n ")
    with pytest.raises(ChakraError) as raised:
        ranks_in_folder(folder)
    assert str(raised.value).startswith(
        f"{folder / 'worker0_step_12.host_et.json'}: named like rank 0's host execution trace"
    )
