"""The generator's traces, read back by the project's own loaders, agree with its truth."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from chakra.ingest import load_device_trace, load_host_trace
from chakra.synth import SynthOptions, generate_job
from chakra.synth.options import options_with_vintages
from tests.synth.conftest import load_json


@pytest.mark.parametrize("vintages", [(), ("no_rf_id",), ("no_flows",), ("legacy_1_0_1",)])
def test_loaded_traces_match_the_truth(tmp_path: Path, vintages: tuple[str, ...]) -> None:
    options = options_with_vintages(SynthOptions(seed=5, ranks=2, ops_per_step=70), vintages)
    summary = generate_job(options, tmp_path)
    for rank in summary.ranks:
        truth = load_json(rank.truth)
        host = load_host_trace(rank.host_et)
        device = load_device_trace(rank.kineto)
        expected_schema = "1.0.1" if "legacy_1_0_1" in vintages else "1.1.1-chakra.0.0.4"
        # 1.0.1 names groups by address and has no group table: numbered, and said so
        assert host.schema == expected_schema
        if "legacy_1_0_1" in vintages:
            (note,) = host.notes
            assert note.startswith("2 process groups named by address (1.0.1 style) were "
                                   "identified by size and order of first use: 0x")  # fmt: skip
            assert host.process_group_init() is None
        else:
            assert host.notes == ()
        assert (device.rank, device.world_size) == (rank.rank, 2)
        in_host = {op["host_id"] for op in truth["host_ops"] if op["host_id"] is not None}
        assert in_host <= {op.id for op in host.ops}
        gpu = Counter((e.correlation, e.stream, e.category) for e in device.gpu_ops)
        assert gpu == Counter(
            (g["correlation"], g["stream"], g["category"]) for g in truth["gpu_ops"]
        )
        runtime = Counter((e.correlation, e.name) for e in device.runtime_calls)
        assert runtime == Counter((r["correlation"], r["name"]) for r in truth["runtime_calls"])
        kineto_rf_ids = {e.rf_id for e in device.cpu_ops if e.rf_id is not None}
        if vintages == ():
            host_rf_ids = {op.rf_id for op in host.ops if op.rf_id}
            assert host_rf_ids - {host.process_group_init().rf_id} <= kineto_rf_ids | {
                s.event.rf_id for s in device.steps}  # fmt: skip
        if "no_rf_id" in vintages:
            assert kineto_rf_ids == set()
        assert (len(device.flows) == 0) == ("no_flows" in vintages)
