"""``pageable_async_copy``: a cudaMemcpyAsync to pageable memory that blocks the CPU."""

from __future__ import annotations

from pathlib import Path

from chakra.ingest import load_device_trace, load_host_trace
from chakra.link import LinkOptions, link_traces
from chakra.synth import SynthOptions, generate_job
from tests.synth.conftest import load_json

BASE = {"seed": 3, "ranks": 1, "steps": 2, "ops_per_step": 70}
PAGEABLE = "Memcpy DtoH (Device -> Pageable)"


def test_the_copy_blocks_its_caller_and_is_linked_as_a_host_sync(tmp_path: Path) -> None:
    plain = generate_job(SynthOptions(**BASE), tmp_path / "plain").ranks[0]
    rank = generate_job(SynthOptions(**BASE, pageable_async_copy=True), tmp_path / "on").ranks[0]
    # Per step: aten::to -> aten::_to_copy -> aten::copy_, one call, one copy.
    assert rank.host_ops - plain.host_ops == 3 * 2
    assert (rank.runtime_calls - plain.runtime_calls, rank.gpu_ops - plain.gpu_ops) == (2, 2)
    events = load_json(rank.kineto)["traceEvents"]
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") == "cuda_runtime"}
    copies = [e for e in events if e.get("cat") == "gpu_memcpy" and e["name"] == PAGEABLE]
    async_copies = [c for c in copies if calls[c["args"]["correlation"]]["name"] != "cudaMemcpy"]
    assert len(copies) == 4 and len(async_copies) == 2
    targets = set()
    for copy in async_copies:
        call = calls[copy["args"]["correlation"]]
        assert call["name"] == "cudaMemcpyAsync"
        assert call["ts"] + call["dur"] > copy["ts"] + copy["dur"]  # returned after the copy
        targets.add(copy["args"]["correlation"])
    truth = load_json(rank.truth)
    syncs = {(e["src"], e["dst"]) for e in truth["edges"] if e["kind"] == "host_sync"}
    assert {(f"gpu:{c}", f"runtime:{c}") for c in targets} <= syncs
    linked = link_traces(load_host_trace(rank.host_et), load_device_trace(rank.kineto),
                         LinkOptions())  # fmt: skip
    correlation = {n.node_id: n.event.correlation for n in linked.gpu_nodes}
    found = {
        correlation[e.src]
        for e in linked.edges
        if e.kind.value == "host_sync" and e.via_api == "cudaMemcpyAsync" and e.dst is not None
    }
    assert found == targets


def test_off_by_default_and_described_only_when_on() -> None:
    assert "pageable_async_copy" not in SynthOptions().describe()
    assert SynthOptions(pageable_async_copy=True).describe()["pageable_async_copy"] is True
