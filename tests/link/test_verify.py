"""Verification of matches and of evidence against the measured times."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chakra.ingest import load_device_trace, load_host_trace
from chakra.link import LinkOptions, link_traces
from chakra.link.report import CoverageError, check_coverage
from chakra.synth import SynthOptions, generate_job


def _swap_two_siblings(document: dict) -> tuple[str, str]:
    """Give two host-ET-recorded Kineto ops each other's Record function id: an exact id
    join now pairs each host op with the other's instance (names differ: rejected)."""
    ops = [e for e in document["traceEvents"]
           if e.get("cat") == "cpu_op" and e["name"].startswith("aten::")]  # fmt: skip
    first = ops[10]
    second = next(e for e in ops[11:] if e["name"] != first["name"])
    a, b = first["args"], second["args"]
    a["Record function id"], b["Record function id"] = (
        b["Record function id"], a["Record function id"])  # fmt: skip
    return first["name"], second["name"]


def test_a_wrong_pair_is_rejected_counted_and_fails_strict(tmp_path: Path) -> None:
    rank = generate_job(SynthOptions(seed=3, ranks=1, steps=1, ops_per_step=70), tmp_path).ranks[0]
    host = load_host_trace(rank.host_et)
    clean = link_traces(host, load_device_trace(rank.kineto), LinkOptions()).report
    assert clean.rejected == {} and clean.contradictions == {}
    check_coverage(clean, 1.0, 1.0)  # a clean link passes --strict
    document = json.loads(rank.kineto.read_text())
    _swap_two_siblings(document)
    broken = tmp_path / "swapped.kineto.json"
    broken.write_text(json.dumps(document))
    report = link_traces(host, load_device_trace(broken), LinkOptions()).report
    assert report.rejected == {"record_function_id": 2}
    assert sum(report.matched.values()) == clean.host_ops - 2
    assert any("rejected" in note for note in report.notes)
    with pytest.raises(CoverageError, match="rejected record_function_id 2"):
        check_coverage(report, 0.0, 0.0)


def test_moved_gpu_op_contradicts_stream_order(tmp_path: Path) -> None:
    """Shift one kernel to start before the kernel ahead of it on its stream ended: the
    stream-order edge now contradicts the measured times and the report says so."""
    rank = generate_job(SynthOptions(seed=4, ranks=1, steps=1, ops_per_step=70), tmp_path).ranks[0]
    clean_edges = link_traces(load_host_trace(rank.host_et), load_device_trace(rank.kineto),
                              LinkOptions()).report.edges  # fmt: skip
    document = json.loads(rank.kineto.read_text())
    kernels = sorted((e for e in document["traceEvents"] if e.get("cat") == "kernel"
                      and e["args"].get("stream") == 7), key=lambda e: e["ts"])  # fmt: skip
    earlier, later = kernels[5], kernels[6]
    later["ts"] = earlier["ts"] + earlier["dur"] / 2  # overlaps its predecessor
    broken = tmp_path / "overlap.kineto.json"
    broken.write_text(json.dumps(document))
    report = link_traces(load_host_trace(rank.host_et), load_device_trace(broken),
                         LinkOptions()).report  # fmt: skip
    assert report.contradictions.get("stream_order") == 1
    assert report.edges["stream_order"] == clean_edges["stream_order"] - 1  # not written
    with pytest.raises(CoverageError, match="stream_order 1"):
        check_coverage(report, 0.0, 0.0)
