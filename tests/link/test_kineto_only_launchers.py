"""Launchers and vintages of the Kineto-only path (issue 33, item 3) on small hand-made
traces: CUDA graphs (one ``cudaGraphLaunch`` whose kernels share its correlation, none with
a launch of its own), ``cudaLaunchKernelExC``, and the 2021 category names (``Operator``,
``Runtime``, ``Kernel``, ``Memcpy``, lower-case ``external id``). The shared traces cover
ROCm, Triton's ``cuLaunchKernel`` and NCCL (tests/pipeline/test_kineto_only.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chakra.convert import ConvertOptions, convert_et_plus
from chakra.ingest import load_device_trace
from chakra.ingest.kineto_host import host_trace_from_kineto
from chakra.link import LinkOptions, link_traces
from chakra.link.et_plus import as_et_plus
from chakra.simulate import build_graph, simulate


def _event(cat: str, name: str, ts: float, dur: float, tid: Any = 1, **args: Any) -> dict:
    pid = 0 if cat.lower() in ("kernel", "memcpy", "gpu_memcpy") else 1
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def _trace(tmp_path: Path, events: list[dict]) -> Path:
    path = tmp_path / "k.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def _cuda_graph() -> list[dict]:
    return [
        _event("cpu_op", "aten::graph_replay", 100, 40, **{"External id": 1}),
        _event("cuda_runtime", "cudaGraphLaunch", 110, 20, correlation=9, **{"External id": 1}),
        *(_event("kernel", f"k{i}", 150 + 30 * i, 25, tid=7, stream=7, device=0, correlation=9,
                 **{"External id": 1}) for i in range(3)),
    ]  # fmt: skip


def _launch_ex() -> list[dict]:
    return [
        _event("cpu_op", "aten::mm", 100, 30, **{"External id": 2}),
        _event("cuda_runtime", "cudaLaunchKernelExC", 105, 10, correlation=4,
               **{"External id": 2}),
        _event("kernel", "gemm", 120, 50, tid=7, stream=7, device=0, correlation=4,
               **{"External id": 2}),
    ]  # fmt: skip


def _legacy_2021() -> list[dict]:
    return [
        _event("Operator", "aten::add", 100, 30, **{"External id": 3}),
        _event("Runtime", "cudaLaunchKernel", 105, 10, correlation=5, **{"external id": 3}),
        _event("Kernel", "add_kernel", 120, 20, tid="stream 7", stream=7, device=0,
               correlation=5, **{"external id": 3}),
        _event("Operator", "aten::copy_", 200, 30, **{"External id": 4}),
        _event("Runtime", "cudaMemcpyAsync", 205, 10, correlation=6, **{"external id": 4}),
        _event("Memcpy", "Memcpy HtoD", 220, 10, tid="stream 7", stream=7, device=0,
               correlation=6, **{"external id": 4}),
    ]  # fmt: skip


@pytest.mark.parametrize(("events", "gpu_ops"), [(_cuda_graph(), 3), (_launch_ex(), 1),
                                                 (_legacy_2021(), 2)],
                         ids=["cuda_graph", "launch_ex", "categories_2021"])  # fmt: skip
def test_every_gpu_op_is_linked_to_the_cpu_op_that_launched_it(
    tmp_path: Path, events: list[dict], gpu_ops: int
) -> None:
    device = load_device_trace(_trace(tmp_path, events))
    linked = link_traces(host_trace_from_kineto(device), device, LinkOptions())
    assert linked.report.gpu_ops_total == linked.report.gpu_ops_linked == gpu_ops
    launcher = {e["args"].get("correlation"): e["ts"] for e in events if "correlation" in e["args"]
                and e["cat"].lower() in ("cuda_runtime", "runtime")}  # fmt: skip
    ops = {op.id: op for op in linked.host.ops}
    for node in linked.gpu_nodes:
        parent = linked.matches[node.parent_id].event
        assert parent.ts_us <= launcher[node.event.args.correlation] <= parent.end_us
        assert ops[node.parent_id].name == parent.name
    graph = convert_et_plus(as_et_plus(linked), ConvertOptions(rank=0))
    rank = simulate([build_graph(graph.nodes, 0)]).ranks[0]
    measured = max(e["ts"] + e["dur"] for e in events) - min(e["ts"] for e in events)
    assert rank.simulated_makespan_us == pytest.approx(measured, abs=1e-6)
