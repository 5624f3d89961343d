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
    ("pinned", "pageable"),
    [("Memcpy HtoD (Pinned -> Device)", "Memcpy HtoD (Pageable -> Device)"),
     ("Memcpy DtoH (Device -> Pinned)", "Memcpy DtoH (Device -> Pageable)")],
)  # fmt: skip
def test_an_async_copy_of_pageable_memory_syncs_like_a_blocking_copy(
    tmp_path: Path, pinned: str, pageable: str
) -> None:
    # two steps: the first step's copies are followed by host ops on their thread
    rank = generate_job(SynthOptions(seed=3, ranks=1, steps=2, ops_per_step=70), tmp_path).ranks[0]
    document = json.loads(rank.kineto.read_text())
    events = document["traceEvents"]
    copy = next(e for e in events if e.get("cat") == "gpu_memcpy" and e["name"] == pinned)
    target = copy["args"]["correlation"]
    (call,) = [e for e in events if e.get("cat") == "cuda_runtime"
               and e["args"].get("correlation") == target]  # fmt: skip
    assert call["name"] == "cudaMemcpyAsync"
    before = copy_syncs(relink(rank.host_et, rank.kineto, document, tmp_path, "same.json"))
    # the synthetic step's only blocking copy is loss.item()'s cudaMemcpy
    assert {via for _, _, via, _ in before} == {"cudaMemcpy"}

    copy["name"] = pageable
    after = copy_syncs(relink(rank.host_et, rank.kineto, document, tmp_path, "pageable.json"))
    call["name"] = "cudaMemcpy"  # the same copy made blocking: the edge it must match
    blocking = copy_syncs(relink(rank.host_et, rank.kineto, document, tmp_path, "blocking.json"))
    (added,) = after - before
    (reference,) = blocking - before
    assert added[0] == reference[0] == target
    assert added[1] == reference[1] and added[1] is not None  # the next host op on the thread
    assert (added[2], added[3]) == ("cudaMemcpyAsync", target)


def test_an_async_copy_of_pinned_memory_is_no_sync(tmp_path: Path) -> None:
    rank = generate_job(SynthOptions(seed=3, ranks=1, steps=1, ops_per_step=70), tmp_path).ranks[0]
    linked = link_traces(load_host_trace(rank.host_et), load_device_trace(rank.kineto),
                         LinkOptions())  # fmt: skip
    async_copies = [n for n in linked.gpu_nodes if n.event.category == "gpu_memcpy"
                    and "Pinned" in n.event.name]  # fmt: skip
    assert async_copies
    assert {via for _, _, via, _ in copy_syncs(linked)} == {"cudaMemcpy"}
