"""The real gloo recordings at two network speeds (``tests/data/pytorch213/gloo_net/``), as the
loaders read them.

Every number here was read from the raw JSON by ``tests/data/pytorch213/gloo_net_facts.py``
(standard library only), not from the loaders; gloo_net/README.md explains them. The same
values held in all 36 ranks of the 12 recordings made (3 repeats of each world size and speed).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from chakra.ingest import load_device_trace, load_host_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "pytorch213" / "gloo_net"
RECORDINGS = {"gloo2_fast_r1": 2, "gloo2_slow_r1": 2, "gloo4_fast_r1": 4, "gloo4_slow_r1": 4}
RANKS = [(name, world, rank) for name, world in RECORDINGS.items() for rank in range(world)]
THREAD_ROOT = "[pytorch|profiler|execution_trace|thread]"
#: per rank and recording (two active steps): DDP's 2 bucket all_reduces + one blocking and
#: one async all_reduce per step, and one broadcast per step
GLOO_OPS = {"gloo:all_reduce": 8, "gloo:broadcast": 2}
C10D_OPS = {"c10d::allreduce_": 8, "c10d::broadcast_": 2}


def _ids(value: tuple) -> str:
    return f"{value[0]}-rank{value[2]}"


@pytest.mark.parametrize(("name", "world", "rank"), RANKS, ids=map(_ids, RANKS))
def test_kineto_gloo_ops_run_on_two_worker_threads(name: str, world: int, rank: int) -> None:
    device = load_device_trace(DATA / name / f"rank{rank}.kineto.json.gz")
    assert [step.number for step in device.steps] == [1, 2]
    main = device.steps[0].event.tid
    assert len(device.cpu_ops) == 614  # 616 cpu_op + user_annotation, less 2 ProfilerSteps
    by_thread = Counter(op.tid == main for op in device.cpu_ops)
    assert by_thread == {True: 604, False: 10}
    gloo = [op for op in device.cpu_ops if op.name.startswith("gloo:")]
    assert Counter(op.name for op in gloo) == GLOO_OPS
    assert {op.category for op in gloo} == {"user_annotation"}
    workers = {op.tid for op in gloo}
    assert main not in workers and len(workers) == 2
    assert {op.tid for op in device.cpu_ops if op.tid != main} == workers  # nothing else
    c10d = [op for op in device.cpu_ops if op.name.startswith("c10d::")]
    assert Counter(op.name for op in c10d) == C10D_OPS
    assert {op.tid for op in c10d} == {main}
    names: dict[object, set[str]] = {}
    for _, tid, thread_name in device.thread_names:
        names.setdefault(tid, set()).add(thread_name.split("(")[-1].rstrip(")"))
    assert all("pt_gloo_runloop" in names[tid] for tid in workers)
    assert names[main] == {"python"}
    dist = device.distributed
    assert dist is not None
    assert (dist.backend, dist.rank, dist.world_size) == ("gloo", rank, world)


@pytest.mark.parametrize(("name", "world", "rank"), RANKS, ids=map(_ids, RANKS))
def test_host_et_has_one_thread_root_for_everything(name: str, world: int, rank: int) -> None:
    """The host ET has no thread for the gloo workers: their gloo ops are filed with tid 1
    under whatever op the main thread had open."""
    host = load_host_trace(DATA / name / f"rank{rank}.host_et.json.gz")
    assert len(host.ops) == 619
    roots = [op for op in host.ops if op.name == THREAD_ROOT]
    assert [op.tid for op in roots] == [1]
    assert Counter(op.tid for op in host.ops) == {1: 618, 0: 1}
    assert Counter(op.name for op in host.ops if op.name.startswith("gloo:")) == GLOO_OPS
    assert Counter(op.name for op in host.ops if op.name.startswith("c10d::")) == C10D_OPS
    assert [pg.group_size for pg in host.process_groups] == [world]


@pytest.mark.parametrize(("name", "world", "rank"), RANKS, ids=map(_ids, RANKS))
def test_record_function_ids_join_all_but_process_group_init(
    name: str, world: int, rank: int
) -> None:
    host = load_host_trace(DATA / name / f"rank{rank}.host_et.json.gz")
    device = load_device_trace(DATA / name / f"rank{rank}.kineto.json.gz")
    host_rf = {op.rf_id: op.name for op in host.ops if op.rf_id}
    events = [*device.cpu_ops, *(step.event for step in device.steps)]
    kineto_rf = {op.args.rf_id: op.name for op in events}
    assert len(host_rf) == 617 and len(kineto_rf) == 616
    joined = host_rf.keys() & kineto_rf.keys()
    assert len(joined) == 616
    assert [host_rf[r] for r in host_rf.keys() - joined] == ["## process_group:init ##"]
    assert all(host_rf[r] == kineto_rf[r] for r in joined)
    assert sum(1 for op in events if op.args.external_id == op.args.rf_id) == 0


@pytest.mark.parametrize("world", [2, 4])
def test_the_slow_network_makes_steps_over_3x_longer(world: int) -> None:
    """Mean ProfilerStep time over ranks: 2 ranks 28.2 ms fast vs 103.3 ms slow, 4 ranks
    89.2 ms vs 296.3 ms."""

    def step_ms(speed: str) -> float:
        durations = [
            step.event.dur_us
            for rank in range(world)
            for step in load_device_trace(
                DATA / f"gloo{world}_{speed}_r1" / f"rank{rank}.kineto.json.gz"
            ).steps
        ]
        return sum(durations) / len(durations) / 1e3

    fast, slow = step_ms("fast"), step_ms("slow")
    assert slow > 3 * fast
    assert {2: 20 < fast < 40, 4: 70 < fast < 120}[world]
