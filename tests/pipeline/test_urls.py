"""The pipeline with inputs and outputs at fsspec URLs: the same outputs as a local run, in
process, in worker processes (``file://``) and on a Dask cluster sharing the process's
memory (``memory://``); a missing input is one line; a rerun reuses finished ranks."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from chakra.cli.pipeline import main
from chakra.pipeline import RankFiles, ranks_in_folder, run_pipeline
from chakra.pipeline.inputs import ranks_in_folders
from chakra.synth import SynthOptions, generate_job

fsspec = pytest.importorskip("fsspec")
RANKS = 3
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def local_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("url-traces")
    generate_job(SynthOptions(seed=7, ranks=RANKS, ops_per_step=60, gzip=True), folder)
    return folder


@pytest.fixture(scope="module")
def local_run(local_job: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("url-local-out")
    run_pipeline(ranks_in_folder(local_job), out, plot=False)
    return out


@pytest.fixture
def memory_job(local_job: Path) -> Iterator[str]:
    """The job's traces copied to a fresh folder of fsspec's in-memory file system."""
    root = f"memory://pipeline-{uuid.uuid4().hex[:8]}"
    fs = fsspec.filesystem("memory")
    for path in local_job.iterdir():
        for kind, folder in (("host", "hosts"), ("kineto", "devices")):
            if kind in path.name:
                fs.pipe(f"{root}/traces/{path.name}", path.read_bytes())
                fs.pipe(f"{root}/{folder}/{path.name}", path.read_bytes())
    yield root
    fs.rm(root, recursive=True)


def same_outputs(read: Callable[[str], bytes], out: str, expected: Path) -> None:
    for rank in range(RANKS):
        assert read(f"{out}/workload.{rank}.et") == (expected / f"workload.{rank}.et").read_bytes()
        assert read(f"{out}/rank{rank}.et_plus.json")  # it names its inputs: not compared
    spans = [
        [r["simulation"]["simulated_makespan_us"] for r in json.loads(report)["ranks"]]
        for report in (read(f"{out}/report.json"), (expected / "report.json").read_bytes())
    ]
    assert spans[0] == spans[1]


def test_memory_urls_give_the_local_outputs(memory_job: str, local_run: Path) -> None:
    fs = fsspec.filesystem("memory")
    ranks = ranks_in_folder(f"{memory_job}/traces")
    assert [r.host for r in ranks] == [
        f"{memory_job}/traces/rank{r}.host_et.json.gz" for r in range(RANKS)
    ]
    by_folders = ranks_in_folders(f"{memory_job}/hosts", f"{memory_job}/devices")
    assert [(r.rank, r.host) for r in by_folders] == [
        (r.rank, r.host.replace("/traces/", "/hosts/")) for r in ranks
    ]
    result = run_pipeline(ranks, f"{memory_job}/out", plot=True)
    assert result.report == f"{memory_job}/out/report.json"
    assert result.plot is not None and fs.cat(result.plot)[:8] == PNG
    same_outputs(fs.cat, f"{memory_job}/out", local_run)
    assert not [p for p in fs.ls(f"{memory_job}/out", detail=False) if "partial" in p]


@pytest.mark.slow
def test_rerun_over_a_url_folder_reuses_finished_ranks(memory_job: str, local_run: Path) -> None:
    fs = fsspec.filesystem("memory")
    ranks = ranks_in_folder(f"{memory_job}/traces")
    out = f"{memory_job}/out"
    run_pipeline(ranks, out, plot=False)
    fs.rm(f"{out}/workload.1.et")
    assert run_pipeline(ranks, out, plot=False).reused == [0, 2]
    assert run_pipeline(ranks, out, plot=False).reused == [0, 1, 2]
    host = f"{memory_job}/traces/rank2.host_et.json.gz"
    fs.pipe(host, fs.cat(host))  # rewritten, the same bytes: still the same input
    assert run_pipeline(ranks, out, plot=False).reused == [0, 1, 2]
    fs.pipe(host, gzip.compress(gzip.decompress(fs.cat(host)), mtime=1))  # other bytes
    assert run_pipeline(ranks, out, plot=False).reused == [0, 1]
    same_outputs(fs.cat, out, local_run)


def test_a_missing_url_input_is_one_line_and_writes_nothing(
    memory_job: str, capsys: pytest.CaptureFixture
) -> None:
    fs = fsspec.filesystem("memory")
    host = f"{memory_job}/traces/rank0.host_et.json.gz"
    device = f"{memory_job}/traces/gone.kineto.json.gz"
    with pytest.raises(SystemExit) as exit_info:
        main(["--host-trace", host, "--device-trace", device,
              "--output-dir", f"{memory_job}/out", "--no-plot"])  # fmt: skip
    assert exit_info.value.code == 1
    error = capsys.readouterr().err
    assert error == (
        f"chakra_pipeline: error: {device}: no such file (the Kineto trace of rank 0)\n"
    )
    assert not fs.exists(f"{memory_job}/out")
    with pytest.raises(SystemExit):
        main(["--trace-dir", f"{memory_job}/none", "--output-dir", f"{memory_job}/out"])
    assert capsys.readouterr().err == (
        f"chakra_pipeline: error: cannot list {memory_job}/none: No such file or directory\n"
    )


def test_dask_cluster_sharing_memory_reads_and_writes_urls(
    memory_job: str, local_run: Path
) -> None:
    distributed = pytest.importorskip("distributed")
    fs = fsspec.filesystem("memory")
    with distributed.LocalCluster(n_workers=2, processes=False, threads_per_worker=1,
                                  dashboard_address=None) as cluster:  # fmt: skip
        ranks = ranks_in_folder(f"{memory_job}/traces")
        run_pipeline(ranks, f"{memory_job}/out", plot=False, executor="dask",
                     scheduler=cluster.scheduler_address, max_memory_gb=1)  # fmt: skip
    same_outputs(fs.cat, f"{memory_job}/out", local_run)


@pytest.mark.slow
def test_file_urls_through_the_cli_in_worker_processes(
    local_job: Path, local_run: Path, tmp_path: Path
) -> None:
    script = [sys.executable, "-m", "chakra.cli.pipeline"]
    out = f"file://{tmp_path}/out"
    result = subprocess.run([*script, "--trace-dir", f"file://{local_job}",
                             "--output-dir", out, "-j", "2", "--no-plot"],
                            capture_output=True, text=True, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"outputs in {out}: report report.json" in result.stdout
    same_outputs(lambda url: Path(url.removeprefix("file://")).read_bytes(), out, local_run)


def test_local_rank_files_still_are_paths(local_job: Path, tmp_path: Path) -> None:
    ranks = ranks_in_folder(local_job)
    assert ranks[0] == RankFiles(0, local_job / "rank0.host_et.json.gz",
                                 local_job / "rank0.kineto.json.gz")  # fmt: skip
    for kind, folder in (("host", "hosts"), ("kineto", "devices")):
        (tmp_path / folder).mkdir()
        for path in local_job.glob(f"*{kind}*"):
            (tmp_path / folder / path.name).symlink_to(path)
    assert ranks_in_folders(tmp_path / "hosts", tmp_path / "devices") == [
        RankFiles(r.rank, tmp_path / "hosts" / r.host.name, tmp_path / "devices" / r.device.name)
        for r in ranks
    ]
