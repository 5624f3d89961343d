"""Speed factors: the same program (same draws, ids, names) recorded at another speed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from chakra.synth import SynthOptions, SynthOptionsError, generate_job, options_with_vintages
from chakra.synth.collectives import transfer_ns
from tests.synth.conftest import load_json

BASE = {"seed": 3, "ranks": 2, "steps": 1, "ops_per_step": 60}
ALL_ONE = {"gpu_factor": 1.0, "cpu_factor": 1.0, "network_factor": 1}


def _generate(folder: Path, **changes: object) -> Path:
    generate_job(SynthOptions(**{**BASE, **changes}), folder)
    return folder


def _kineto(folder: Path, rank: int, cat: str) -> list[dict]:
    events = load_json(folder / f"rank{rank}.kineto.json")["traceEvents"]
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == cat]


def _ns(us: float) -> int:
    return round(us * 1000)


def _makespan_ns(folder: Path, rank: int) -> int:
    truth = load_json(folder / f"rank{rank}.truth.json")
    spans = truth["host_ops"] + truth["runtime_calls"] + truth["gpu_ops"]
    end = max(_ns(e["ts_us"]) + _ns(e["dur_us"]) for e in spans)
    return end - min(_ns(e["ts_us"]) for e in spans)


@pytest.mark.parametrize(
    "options",
    [SynthOptions(**BASE),
     options_with_vintages(SynthOptions(seed=5, ranks=3, steps=2, ops_per_step=40, host_step=1,
                                        integer_timestamps=True, gzip=True),
                           ["tied_zero_ops", "legacy_1_0_1"])],
)  # fmt: skip
def test_factors_of_one_write_the_same_bytes(tmp_path: Path, options: SynthOptions) -> None:
    plain = tmp_path / "plain"
    generate_job(options, plain)
    one = tmp_path / "one"
    generate_job(dataclasses.replace(options, **ALL_ONE), one)
    names = sorted(p.name for p in plain.iterdir())
    assert names == sorted(p.name for p in one.iterdir()) and len(names) == 3 * options.ranks + 1
    for name in names:
        assert (plain / name).read_bytes() == (one / name).read_bytes(), name
    assert "gpu_factor" not in load_json(plain / "job.truth.json")["options"]


def test_half_gpu_speed_halves_every_gpu_op_and_nothing_else(tmp_path: Path) -> None:
    full = _generate(tmp_path / "full")
    half = _generate(tmp_path / "half", gpu_factor=0.5)
    for rank in range(2):
        for cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            before, after = _kineto(full, rank, cat), _kineto(half, rank, cat)
            assert len(before) == len(after) > 0
            for a, b in zip(before, after):
                assert (a["name"], a["args"]["correlation"], a["args"]["External id"]) == (
                    b["name"], b["args"]["correlation"], b["args"]["External id"])  # fmt: skip
                if not a["name"].startswith("ncclDevKernel"):  # lasts as long as its transfer
                    assert abs(_ns(b["dur"]) - _ns(a["dur"]) / 2) <= 1, a["name"]
        ops_before = [e["name"] for e in _kineto(full, rank, "cpu_op")]
        assert ops_before == [e["name"] for e in _kineto(half, rank, "cpu_op")]
        launches_before = _kineto(full, rank, "cuda_runtime")
        launches_after = _kineto(half, rank, "cuda_runtime")
        assert [e["name"] for e in launches_before] == [e["name"] for e in launches_after]
        host_before = load_json(full / f"rank{rank}.host_et.json")["nodes"]
        host_after = load_json(half / f"rank{rank}.host_et.json")["nodes"]
        assert host_before == host_after  # the host ET holds no times
        assert _makespan_ns(half, rank) < _makespan_ns(full, rank)
    options = load_json(half / "rank0.truth.json")["options"]
    assert (options["gpu_factor"], options["cpu_factor"], options["network_factor"]) == (
        0.5, 1.0, 1.0)  # fmt: skip


def test_half_cpu_speed_halves_launch_calls_not_kernels(tmp_path: Path) -> None:
    full = _generate(tmp_path / "full")
    half = _generate(tmp_path / "half", cpu_factor=0.5)
    before = [e for e in _kineto(full, 0, "cuda_runtime") if e["name"] == "cudaLaunchKernel"]
    after = [e for e in _kineto(half, 0, "cuda_runtime") if e["name"] == "cudaLaunchKernel"]
    assert len(before) == len(after) > 0
    for a, b in zip(before, after):
        assert abs(_ns(b["dur"]) - _ns(a["dur"]) / 2) <= 1
    kernels = [(k["name"], k["dur"]) for k in _kineto(full, 0, "kernel")
               if not k["name"].startswith("ncclDevKernel")]  # fmt: skip
    assert kernels == [(k["name"], k["dur"]) for k in _kineto(half, 0, "kernel")
                       if not k["name"].startswith("ncclDevKernel")]  # fmt: skip
    assert _makespan_ns(half, 0) < _makespan_ns(full, 0)


def test_network_factor_scales_latency_and_bandwidth_parts() -> None:
    # all_reduce of 2^20 floats in a pair: 2 * 1/2 * 4 MiB = 4,194,304 B at 150 B/ns
    # = 27,962 ns, plus 8,000 ns latency.
    assert transfer_ns("all_reduce", 1 << 20, 2) == 35_962
    assert transfer_ns("all_reduce", 1 << 20, 2, 0.5) == 17_981
    assert transfer_ns("all_reduce", 1 << 20, 2, 2.0) == 71_924


def test_half_network_speed_ends_the_first_broadcast_earlier(tmp_path: Path) -> None:
    full = load_json(_generate(tmp_path / "full") / "job.truth.json")["collectives"]
    half = load_json(_generate(tmp_path / "half", network_factor=0.5) / "job.truth.json")
    assert [(c["pg_name"], c["seq"], c["kind"]) for c in full] == [
        (c["pg_name"], c["seq"], c["kind"]) for c in half["collectives"]]  # fmt: skip
    assert full[0]["kind"] == "broadcast"
    # 2^10 floats: 4,096 B / 150 B/ns = 27 ns + 8,000 ns = 8,027 ns; at 0.5 round(4,013.5)
    # = 4,014 ns; nothing before the first collective depends on the network.
    assert _ns(full[0]["end_us"]) - _ns(half["collectives"][0]["end_us"]) == 8_027 - 4_014


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), True, "2"])
@pytest.mark.parametrize("name", ["gpu_factor", "cpu_factor", "network_factor"])
def test_bad_factors_raise_one_line(name: str, value: object) -> None:
    with pytest.raises(SynthOptionsError, match=f"^{name} must be a finite number above 0") as e:
        SynthOptions(**{name: value})
    assert "\n" not in str(e.value)
