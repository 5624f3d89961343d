"""``worker_threads``: a data-loader thread and a gloo-like CPU all_reduce on a worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra.synth import SynthOptions, generate_job
from chakra.synth.invariants import validate_job
from tests.synth.conftest import load_json

BASE = {"seed": 6, "ranks": 2, "steps": 2, "ops_per_step": 70}
LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
#: transfer of the gloo all_reduce at 2 ranks: 8 us latency + 2**21 floats * 4 B * 2(n-1)/n
#: on the wire / 150 B/ns = 8000 + int(8388608 / 150) = 8000 + 55924 ns
GLOO_TRANSFER_US = 63.924


def test_off_by_default_output_unchanged(tmp_path: Path) -> None:
    default = generate_job(SynthOptions(**BASE), tmp_path / "default")
    explicit = generate_job(SynthOptions(**BASE, worker_threads=False), tmp_path / "off")
    for name in sorted(p.name for p in default.out_dir.iterdir()):
        assert (default.out_dir / name).read_bytes() == (explicit.out_dir / name).read_bytes()
    assert "worker_threads" not in SynthOptions().describe()
    assert SynthOptions(worker_threads=True).describe()["worker_threads"] is True


def test_threads_ops_and_where_each_file_puts_them(tmp_path: Path) -> None:
    plain = generate_job(SynthOptions(**BASE), tmp_path / "plain")
    summary = generate_job(SynthOptions(**BASE, worker_threads=True), tmp_path / "on")
    gloo_spans: list[list[tuple[float, float, float]]] = []
    for before, rank in zip(plain.ranks, summary.ranks):
        # per step: loader 1 + 2 x (stack, cat) + pin_memory, _pin_memory, copy_ = 8;
        # c10d::allreduce_, gloo:all_reduce, aten::view, c10d::wait = 4; no GPU work
        assert rank.host_ops - before.host_ops == 12 * 2
        assert (rank.gpu_ops, rank.runtime_calls) == (before.gpu_ops, before.runtime_calls)
        events = load_json(rank.kineto)["traceEvents"]
        labels = {e["args"]["name"].split("(")[1].rstrip(")"): e["tid"] for e in events
                  if e.get("name") == "thread_name" and "(pt_" in e["args"]["name"]}  # fmt: skip
        assert set(labels) == {"pt_main_thread", "pt_autograd_0", "pt_data_loader",
                               "pt_gloo_runloop"}  # fmt: skip
        assert len(set(labels.values())) == 4
        by_name: dict[str, list[dict]] = {}
        for event in events:
            if event.get("ph") == "X" and event.get("cat") in ("cpu_op", "user_annotation"):
                by_name.setdefault(event["name"], []).append(event)
        assert {e["tid"] for e in by_name[LOADER]} == {labels["pt_data_loader"]}
        assert {e["tid"] for e in by_name["gloo:all_reduce"]} == {labels["pt_gloo_runloop"]}
        assert {e["tid"] for e in by_name["c10d::wait"]} == {labels["pt_main_thread"]}
        nodes = {n["id"]: n for n in load_json(rank.host_et)["nodes"]}
        tid = {n["id"]: next(a["value"] for a in n["attrs"] if a["name"] == "tid")
               for n in nodes.values()}  # fmt: skip
        threads = {tid[i]: i for i, n in nodes.items() if n["name"].endswith("thread]")}
        assert sorted(threads) == [1, 2, 3, 4]
        gloo = [n for n in nodes.values() if n["name"] == "gloo:all_reduce"]
        assert len(gloo) == 2
        for node in gloo:  # filed where it was started: under c10d::allreduce_, tid 1
            assert nodes[node["ctrl_deps"]]["name"] == "c10d::allreduce_"
            assert tid[node["id"]] == tid[node["ctrl_deps"]] == 1
        views = [n for n in nodes.values() if n["name"] == "aten::view"]
        assert [n["ctrl_deps"] for n in views] == [threads[4], threads[4]]
        loaders = [n for n in nodes.values() if n["name"] == LOADER]
        assert [n["ctrl_deps"] for n in loaders] == [threads[3], threads[3]]
        for event, view in zip(by_name["gloo:all_reduce"], by_name["aten::view"]):
            assert (
                event["ts"] < view["ts"] and view["ts"] + view["dur"] < event["ts"] + event["dur"]
            )
        gloo_spans.append(
            [
                (e["ts"], round(e["ts"] + e["dur"], 3), round(v["ts"] + v["dur"], 3))
                for e, v in zip(by_name["gloo:all_reduce"], by_name["aten::view"])
            ]
        )
    for step in range(2):  # the ranks meet: one common end, after the last arrival + transfer
        spans = [per_rank[step] for per_rank in gloo_spans]
        assert len({end for _s, end, _v in spans}) == 1
        end = spans[0][1]
        last_view = max(v for _s, _e, v in spans)
        # arrival = view end + 2..5 us, then the transfer
        assert GLOO_TRANSFER_US + 2 <= end - last_view <= GLOO_TRANSFER_US + 5
    assert validate_job(summary.out_dir) == ()


@pytest.mark.parametrize(
    "extra",
    [{"host_step": 1}, {"legacy_host_et": True}, {"tied_zero_ops": True},
     {"cpu_factor": 3.0, "network_factor": 0.05}, {"ranks": 3, "integer_timestamps": True}],
)  # fmt: skip
def test_worker_threads_pass_validation(tmp_path: Path, extra: dict) -> None:
    generate_job(SynthOptions(**{**BASE, **extra}, worker_threads=True), tmp_path)
    assert validate_job(tmp_path) == ()
