"""Property tests of the trace parsers: routing and ordering invariants, and robustness."""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chakra.errors import ChakraError, TraceFormatError
from chakra.ingest import load_device_trace, load_host_trace

CATEGORIES = ["cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "kernel",
              "gpu_memcpy", "gpu_memset", "cuda_sync", "gpu_user_annotation", "ac2g",
              "python_function", "Trace"]  # fmt: skip
GROUP_OF = {"cpu_op": "cpu_ops", "user_annotation": "cpu_ops", "cuda_runtime": "runtime_calls",
            "cuda_driver": "runtime_calls", "kernel": "gpu_ops", "gpu_memcpy": "gpu_ops",
            "gpu_memset": "gpu_ops", "cuda_sync": "cuda_syncs",
            "gpu_user_annotation": "gpu_annotations", "ac2g": "flows"}  # fmt: skip

times = st.one_of(st.integers(0, 10**15), st.floats(0, 1e12, allow_nan=False).map(
    lambda t: round(t, 3)))  # fmt: skip
events = st.fixed_dictionaries(
    {
        "ph": st.sampled_from(["X", "s", "f"]),
        "cat": st.sampled_from(CATEGORIES),
        "name": st.sampled_from(["aten::mm", "cudaLaunchKernel", "gemm", "ProfilerStep#2"]),
        "pid": st.integers(0, 3),
        "tid": st.integers(0, 3),
        "ts": times,
        "dur": st.integers(0, 1000),
        "args": st.fixed_dictionaries({}, optional={
            "External id": st.integers(0, 99), "correlation": st.integers(0, 99),
            "stream": st.integers(0, 40), "Record function id": st.integers(0, 99)}),
    }
)  # fmt: skip


def write_json(folder: str, document: Any) -> Path:
    path = Path(folder) / "trace.json"
    path.write_text(json.dumps(document))
    return path


@settings(max_examples=80, deadline=None)
@given(st.lists(events, max_size=40))
def test_every_event_lands_in_its_group_sorted(raw_events: list[dict[str, Any]]) -> None:
    recognised = {"cpu_ops", "runtime_calls", "gpu_ops"}
    with tempfile.TemporaryDirectory() as folder:
        path = write_json(folder, {"traceEvents": raw_events})
        if not any(GROUP_OF.get(e["cat"]) in recognised for e in raw_events):
            with pytest.raises(TraceFormatError, match="no recognised Kineto events"):
                load_device_trace(path)
            return
        trace = load_device_trace(path)
    assert dict(trace.category_counts) == Counter(e["cat"] for e in raw_events)
    for group in set(GROUP_OF.values()):
        loaded = getattr(trace, group)
        keys = [(e.ts_us, -e.dur_us) for e in loaded]
        assert keys == sorted(keys)
        expected = [e for e in raw_events if GROUP_OF.get(e["cat"]) == group]
        if group == "cpu_ops":
            expected = [e for e in expected if not e["name"].startswith("ProfilerStep#")]
        assert Counter((e.name, e.ts_us, e.dur_us) for e in loaded) == Counter(
            (e["name"], e["ts"], e["dur"]) for e in expected
        )
    steps = [e for e in raw_events if GROUP_OF.get(e["cat"]) == "cpu_ops"
             and e["name"].startswith("ProfilerStep#")]  # fmt: skip
    assert [s.number for s in trace.steps] == [2] * len(steps)


scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False)
json_values = st.recursive(
    scalars | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["nodes", "traceEvents", "schema", "id", "name", "ts", "ph", "cat",
                         "ctrl_deps", "attrs", "args", "dur"]), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(json_values)
@pytest.mark.slow
def test_any_json_loads_or_raises_a_chakra_error(document: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = write_json(folder, document)
        for load in (load_host_trace, load_device_trace):
            try:
                load(path)
            except ChakraError as exc:
                assert str(exc).startswith(str(path))
