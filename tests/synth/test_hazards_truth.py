"""Hazards and the ground truth: unchanged bytes without them, exact truth with them at every
speed, every invariant, and the project's linker reads each."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest

from chakra.ingest import load_device_trace, load_host_trace
from chakra.link import LinkOptions, link_traces
from chakra.synth import SynthOptions, generate_job, options_with_vintages
from chakra.synth.invariants import validate_job
from tests.synth.conftest import load_json
from tests.synth.test_cli import synth

HAZARDS = {"worker_threads": True, "blocking_gloo": True, "unrecorded_gloo_ranks": (1,),
           "stale_host_parents": True, "cuda_sync_records": False}  # fmt: skip
BASE = {"seed": 12, "ranks": 3, "steps": 2, "ops_per_step": 50}


def _digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.mark.parametrize(
    ("options", "expected"),
    [(SynthOptions(seed=4, ranks=3, steps=2, ops_per_step=80, worker_threads=True),
      "ef5505e79cae1fbc11b1399c82168b4a0b9e0137c493c4c8e1783d7df81c92eb"),
     (options_with_vintages(SynthOptions(seed=7, ranks=2, ops_per_step=60, host_step=1,
                                         pageable_async_copy=True),
                            ["legacy_1_0_1", "tied_zero_ops"]),
      "6a4c77eaf9c9bbb85e95e19482e25367174801ecee57ba53cbfd7edc7c24505d")],
)  # fmt: skip
def test_without_the_hazards_the_files_are_those_of_before(
    tmp_path: Path, options: SynthOptions, expected: str
) -> None:
    """Digests of the files the generator wrote before the hazard options existed (commit
    3c05105); a deliberate change of the generator's output updates them."""
    generate_job(options, tmp_path)
    assert _digest(tmp_path) == expected


def test_factors_of_one_with_every_hazard_write_the_same_bytes(tmp_path: Path) -> None:
    options = SynthOptions(**BASE, **HAZARDS)
    generate_job(options, tmp_path / "plain")
    ones = {"gpu_factor": 1, "cpu_factor": 1.0, "network_factor": 1.0}
    generate_job(dataclasses.replace(options, **ones), tmp_path / "one")
    assert _digest(tmp_path / "plain") == _digest(tmp_path / "one")


def _waits(folder: Path, rank: int) -> list[tuple[int, int, int, int]]:
    """Each blocked wait: (parent external id, waited-for external id, wait end - waited-for
    op's end in ns, wait length in ns)."""
    truth = load_json(folder / f"rank{rank}.truth.json")
    ops = {op["external_id"]: op for op in truth["host_ops"]}
    found = []
    for wait in truth["host_waits"]:
        waited = ops[wait["waited_for_external_id"]]
        end = round(wait["ts_us"] * 1000) + round(wait["dur_us"] * 1000)
        waited_end = round(waited["ts_us"] * 1000) + round(waited["dur_us"] * 1000)
        found.append((wait["parent_external_id"], wait["waited_for_external_id"],
                      end - waited_end, round(wait["dur_us"] * 1000)))  # fmt: skip
    return found


@pytest.mark.parametrize(
    "factor", [{"gpu_factor": 0.5}, {"cpu_factor": 2.0}, {"cpu_factor": 0.5},
               {"network_factor": 4.0}, {"gpu_factor": 2.0, "network_factor": 0.25}],
)  # fmt: skip
def test_speed_factors_keep_the_hazards_and_their_truth_exact(tmp_path: Path, factor: dict) -> None:
    """Same program at another speed: same host ET nodes (they hold no times), same waits on the
    same ops, each still lasting until the worker's op ended plus a wake-up of 1-3 us times
    the CPU factor."""
    options = SynthOptions(**BASE, **HAZARDS)
    generate_job(options, tmp_path / "one")
    generate_job(dataclasses.replace(options, **factor), tmp_path / "scaled")
    cpu = factor.get("cpu_factor", 1.0)
    for rank in range(options.ranks):
        name = f"rank{rank}.host_et.json"
        nodes = [load_json(tmp_path / run / name)["nodes"] for run in ("one", "scaled")]
        assert nodes[0] == nodes[1]
        before, after = _waits(tmp_path / "one", rank), _waits(tmp_path / "scaled", rank)
        assert [w[:2] for w in before] == [w[:2] for w in after] and len(after) == 4
        for _parent, _waited, wake_ns, _length in after:
            assert 1_000 * cpu - 1 <= wake_ns <= 3_000 * cpu + 1
        stale = [(op["external_id"], op["stale_host_parent_id"])
                 for op in load_json(tmp_path / "scaled" / f"rank{rank}.truth.json")["host_ops"]
                 if "stale_host_parent_id" in op]  # fmt: skip
        assert len(stale) == 6
    assert validate_job(tmp_path / "scaled") == ()


@pytest.mark.parametrize(
    "extra",
    [{"host_step": 1}, {"legacy_host_et": True}, {"tied_zero_ops": True},
     {"ranks": 5, "integer_timestamps": True, "gzip": True}, {"ranks": 1, "steps": 3},
     {"cpu_factor": 3.0, "network_factor": 0.05, "gpu_factor": 0.3},
     {"worker_threads": False, "unrecorded_gloo_ranks": ()}],
)  # fmt: skip
def test_every_invariant_holds_with_the_hazards(tmp_path: Path, extra: dict) -> None:
    options = SynthOptions(**{**BASE, **HAZARDS, "unrecorded_gloo_ranks": (0,), **extra})
    generate_job(options, tmp_path)
    assert validate_job(tmp_path) == ()


@pytest.mark.parametrize(
    "hazard",
    [{"cuda_sync_records": False}, {"blocking_gloo": True},
     {"worker_threads": True, "unrecorded_gloo_ranks": (0,)}, {"stale_host_parents": True},
     HAZARDS],
)  # fmt: skip
def test_the_linker_reads_each_hazard(tmp_path: Path, hazard: dict) -> None:
    summary = generate_job(SynthOptions(**{**BASE, "ranks": 2, **hazard}), tmp_path)
    for rank in summary.ranks:
        host = load_host_trace(rank.host_et)
        device = load_device_trace(rank.kineto)
        assert (len(device.cuda_syncs) == 0) == (hazard.get("cuda_sync_records") is False)
        linked = link_traces(host, device, LinkOptions())
        truth = load_json(rank.truth)
        in_host = sum(1 for op in truth["host_ops"] if op["host_id"] is not None)
        assert linked.report.matched == {"record_function_id": in_host}
        assert linked.report.gpu_ops_total == len(truth["gpu_ops"])


def test_cli_flags_reach_the_truth(tmp_path: Path) -> None:
    result = synth("--out-dir", str(tmp_path), "--steps", "1", "--ops-per-step", "30",
                   "--ranks", "3", "--vintage", "no_cuda_sync", "--blocking-gloo",
                   "--unrecorded-gloo-worker", "2,0", "--stale-host-parents",
                   "--validate")  # fmt: skip
    assert result.returncode == 0, result.stderr
    options = load_json(tmp_path / "job.truth.json")["options"]
    assert options["vintages"] == ["no_cuda_sync"] and options["cuda_sync_records"] is False
    assert options["blocking_gloo"] and options["stale_host_parents"]
    assert options["unrecorded_gloo_ranks"] == [0, 2]


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [(["--unrecorded-gloo-worker", "x"], 2,
      "argument --unrecorded-gloo-worker: 'x' is not 'all' or comma-separated rank numbers"),
     (["--unrecorded-gloo-worker", "all"], 2, "needs a gloo worker"),
     (["--unrecorded-gloo-worker", "4", "--blocking-gloo"], 2, "from 0 to 1, not 4")],
)  # fmt: skip
def test_cli_refuses_bad_unrecorded_ranks(
    tmp_path: Path, args: list[str], status: int, message: str
) -> None:
    result = synth("--out-dir", str(tmp_path / "out"), *args)
    assert result.returncode == status
    assert message in result.stderr.splitlines()[-1]
    assert not (tmp_path / "out").exists()
