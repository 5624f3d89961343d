"""A device trace written by ``dump_device_trace`` reads back equal, event for event and
type for type, whatever the chunking."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from chakra.ingest import device_transfer, load_device_trace
from chakra.ingest.device_model import DeviceTrace
from chakra.ingest.device_transfer import dump_device_trace, load_device_dump
from chakra.synth import SynthOptions, generate_job
from tests.link.test_real_traces import FIXTURES

EVENT_FIELDS = ("cpu_ops", "runtime_calls", "gpu_ops", "cuda_syncs", "gpu_annotations")


def _round_trip(trace: DeviceTrace) -> DeviceTrace:
    buffer = io.BytesIO()
    dump_device_trace(trace, buffer)
    buffer.seek(0)
    copy = load_device_dump(buffer)
    assert buffer.read() == b""  # every pickle written was read
    return copy


def _typed(trace: DeviceTrace, name: str) -> list[tuple]:
    """Each event of a field with the types of its numbers (1 == 1.0, but not in a file)."""
    return [
        (event, type(event.ts_us), type(event.dur_us), type(event.pid), type(event.tid))
        for event in getattr(trace, name)
    ]


def _assert_same(copy: DeviceTrace, trace: DeviceTrace) -> None:
    assert copy == trace
    for name in EVENT_FIELDS:
        assert _typed(copy, name) == _typed(trace, name)
        assert type(getattr(copy, name)) is tuple
    assert list(copy.flows) == list(trace.flows)
    assert copy.steps == trace.steps and copy.distributed == trace.distributed


@pytest.mark.parametrize("chunk", [1, 7, device_transfer.CHUNK_EVENTS])
def test_a_synthetic_trace_reads_back_equal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    options = SynthOptions(seed=3, ranks=1, steps=2, ops_per_step=40, integer_timestamps=False)
    rank = generate_job(options, tmp_path).ranks[0]
    trace = load_device_trace(rank.kineto)
    assert len(trace.gpu_ops) > 7 and len(trace.flows) > 0  # several chunks of each
    monkeypatch.setattr(device_transfer, "CHUNK_EVENTS", chunk)
    _assert_same(_round_trip(trace), trace)


def test_a_real_trace_reads_back_equal() -> None:
    trace = load_device_trace(FIXTURES / "gloo_2rank" / "rank0.kineto.json.gz")
    _assert_same(_round_trip(trace), trace)


def test_integer_timestamps_stay_integers(tmp_path: Path) -> None:
    options = SynthOptions(seed=5, ranks=1, steps=1, ops_per_step=20, integer_timestamps=True)
    trace = load_device_trace(generate_job(options, tmp_path).ranks[0].kineto)
    copy = _round_trip(trace)
    assert {type(e.ts_us) for e in copy.gpu_ops} == {type(e.ts_us) for e in trace.gpu_ops} == {int}


def test_a_trace_without_events_reads_back_equal() -> None:
    trace = DeviceTrace("empty.json", (), (), (), (), (), (), (), ())
    assert _round_trip(trace) == trace
