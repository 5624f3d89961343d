"""Host synchronisation evidence: copies from or to pageable host memory block the caller."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chakra.ingest import load_device_trace, load_host_trace
from chakra.link import LinkedTrace, LinkOptions, link_traces
from chakra.synth import SynthOptions, generate_job


def copy_syncs(linked: LinkedTrace) -> set[tuple[int, object, str, object]]:
    """Host-sync edges of copy calls: (copy's correlation, dst, via, via correlation)."""
    correlation = {n.node_id: n.event.correlation for n in linked.gpu_nodes}
    return {
        (correlation[e.src], e.dst, e.via_api, e.via_correlation)
        for e in linked.edges
        if e.kind.value == "host_sync" and "Memcpy" in (e.via_api or "")
    }


def relink(host: Path, kineto: Path, document: dict, tmp_path: Path, name: str) -> LinkedTrace:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return link_traces(load_host_trace(host), load_device_trace(path), LinkOptions())


@pytest.mark.parametrize(
    "pageable", ["Memcpy DtoH (Device -> Pageable)", "Memcpy HtoD (Pageable -> Device)"]
)
def test_an_async_copy_of_pageable_memory_syncs_like_a_blocking_copy(
    tmp_path: Path, pageable: str
) -> None:
    """loss.item()'s copy to pageable memory blocked its caller (the host op after the call
    starts after the copy ended). Called as cudaMemcpyAsync, as real traces show, it is the
    same host sync as with cudaMemcpy; were it not recognised, the edge would be missing."""
    rank = generate_job(SynthOptions(seed=3, ranks=1, steps=2, ops_per_step=70), tmp_path).ranks[0]
    document = json.loads(rank.kineto.read_text())
    events = document["traceEvents"]
    copy = next(e for e in events if e.get("cat") == "gpu_memcpy" and "Pageable" in e["name"])
    target = copy["args"]["correlation"]
    (call,) = [e for e in events if e.get("cat") == "cuda_runtime"
               and e["args"].get("correlation") == target]  # fmt: skip
    assert call["name"] == "cudaMemcpy"
    blocking = copy_syncs(relink(rank.host_et, rank.kineto, document, tmp_path, "blocking.json"))
    (reference,) = [edge for edge in blocking if edge[0] == target]
    assert reference[1] is not None  # the next host op on the thread
    copy["name"] = pageable
    call["name"] = "cudaMemcpyAsync"
    after = copy_syncs(relink(rank.host_et, rank.kineto, document, tmp_path, "async.json"))
    (added,) = [edge for edge in after if edge[0] == target]
    assert added == (target, reference[1], "cudaMemcpyAsync", target)
    copy["name"] = pageable.replace("Pageable", "Pinned")  # a pinned async copy: no sync
    pinned = copy_syncs(relink(rank.host_et, rank.kineto, document, tmp_path, "pinned.json"))
    assert [edge for edge in pinned if edge[0] == target] == []


def test_an_async_copy_of_pinned_memory_is_no_sync(tmp_path: Path) -> None:
    rank = generate_job(SynthOptions(seed=3, ranks=1, steps=1, ops_per_step=70), tmp_path).ranks[0]
    linked = link_traces(load_host_trace(rank.host_et), load_device_trace(rank.kineto),
                         LinkOptions())  # fmt: skip
    async_copies = [n for n in linked.gpu_nodes if n.event.category == "gpu_memcpy"
                    and "Pinned" in n.event.name]  # fmt: skip
    assert async_copies
    assert {via for _, _, via, _ in copy_syncs(linked)} == {"cudaMemcpy"}
