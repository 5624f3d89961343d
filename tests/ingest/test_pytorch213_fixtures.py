"""Our own PyTorch 2.13 CPU recordings (tests/data/pytorch213, facts in its README)."""

from __future__ import annotations

from collections import Counter

import pytest

from chakra.ingest import DeviceTrace, HostTrace, load_device_trace, load_host_trace
from tests.conftest import REPO_ROOT

DATA = REPO_ROOT / "tests" / "data" / "pytorch213"


def pair(host: str, device: str) -> tuple[HostTrace, DeviceTrace]:
    return load_host_trace(DATA / host), load_device_trace(DATA / device)


def kineto_rf_ids(device: DeviceTrace) -> Counter:
    events = [*device.cpu_ops, *(step.event for step in device.steps)]
    return Counter(e.rf_id for e in events if e.rf_id is not None)


def test_single_process_pair() -> None:
    host, device = pair("single/host_et.json.gz", "single/kineto.json.gz")
    assert host.schema == "1.1.1-chakra.0.0.4"
    assert len(host.ops) == 1020
    assert [op.name for op in host.thread_roots()] == ["[pytorch|profiler|execution_trace|thread]"]
    assert device.count("cpu_op") == 1012 and device.count("user_annotation") == 6
    assert [step.number for step in device.steps] == [1, 2]
    host_ids = [op.rf_id for op in host.ops if op.rf_id]
    assert len(host_ids) == len(set(host_ids)) == 1018
    kineto_ids = kineto_rf_ids(device)
    assert max(kineto_ids.values()) == 1  # each record-function id once
    assert set(host_ids) == set(kineto_ids)  # every host op joins
    assert all(op.attr("tensor_range") == "" for op in host.ops)  # PyTorch 2.13 extra attr


@pytest.mark.parametrize(("rank", "nodes", "joined"), [(0, 141, 136), (1, 140, 135)])
def test_gloo_ranks(rank: int, nodes: int, joined: int) -> None:
    host, device = pair(f"gloo_2rank/rank{rank}.host_et.json.gz",
                        f"gloo_2rank/rank{rank}.kineto.json.gz")  # fmt: skip
    assert len(host.ops) == nodes
    assert len(host.thread_roots()) == 3
    (group,) = host.process_groups
    assert (group.pg_name, group.pg_desc, group.ranks, group.group_size) == (
        "0", "default_pg", (), 2)  # fmt: skip
    assert (device.rank, device.world_size) == (rank, 2)
    host_ids = {op.rf_id for op in host.ops if op.rf_id}
    assert len(host_ids & set(kineto_rf_ids(device))) == joined
    # the one host op outside the profiled window: written when the observer started
    (unjoined,) = [op for op in host.ops if op.rf_id and op.rf_id not in kineto_rf_ids(device)]
    assert unjoined.name == "## process_group:init ##"
    names = Counter(op.name for op in host.ops)
    assert names["c10d::allreduce_"] == names["c10d::broadcast_"] == names["c10d::barrier"] == 1
    assert names["gloo:all_reduce"] == names["gloo:all_to_all"] == 2
    assert names["c10d::send" if rank == 0 else "c10d::recv_"] == 1
