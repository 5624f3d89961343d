"""The linker refuses, before writing, an ET+ the converter would refuse
(:func:`chakra.link.writable.check_writable`), naming the file the bad value came from."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from chakra.errors import TraceFormatError
from chakra.ingest import load_device_trace, load_host_trace
from chakra.link import LinkOptions, link_traces
from chakra.link.et_plus import as_et_plus, write_et_plus
from chakra.link.linked_trace import LinkedTrace

HOST = "hta/simple_add.host_et.json.gz"
KINETO = "hta/simple_add.kineto.json.gz"


@pytest.fixture(scope="module")
def linked(shared_traces: Path) -> LinkedTrace:
    host = load_host_trace(shared_traces / HOST)
    return link_traces(host, load_device_trace(shared_traces / KINETO), LinkOptions())


def _refused(linked: LinkedTrace, tmp_path: Path, names: str, problem: str) -> None:
    target = tmp_path / "out.et_plus.json"
    with pytest.raises(TraceFormatError, match=problem) as info:
        write_et_plus(linked, target)
    assert info.value.path == names
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(TraceFormatError, match=problem):
        as_et_plus(linked)


def test_a_valid_link_is_written(linked: LinkedTrace, tmp_path: Path) -> None:
    write_et_plus(linked, tmp_path / "out.et_plus.json")


def test_a_gpu_time_beyond_the_limit_names_the_kineto_trace(
    linked: LinkedTrace, tmp_path: Path
) -> None:
    """2^61 us passes the Kineto loader (under 2^63 us) but not a .et (2^62 ns)."""
    gpu = linked.gpu_nodes[0]
    late = msgspec.structs.replace(gpu, event=msgspec.structs.replace(gpu.event, ts_us=2**61))
    bad = msgspec.structs.replace(linked, gpu_nodes=(late, *linked.gpu_nodes[1:]))
    _refused(bad, tmp_path, linked.device.path, f"node {gpu.node_id}: ts {2**61} is not")


def test_a_negative_header_time_names_the_host_et(linked: LinkedTrace, tmp_path: Path) -> None:
    host = msgspec.structs.replace(linked.host, finish_ts=-1)
    bad = msgspec.structs.replace(linked, host=host)
    _refused(bad, tmp_path, linked.host.path, "header finish_ts -1 is not 0 to 2")


def test_ops_placed_under_each_other_name_the_kineto_trace(
    linked: LinkedTrace, tmp_path: Path
) -> None:
    """Where ops ran (``ran_under``, from Kineto's nesting) must not close a cycle."""
    first, second = sorted(linked.matches)[5:7]
    tid = linked.host.op_by_id()[first].tid
    bad = msgspec.structs.replace(linked, ran_under={first: (second, tid), second: (first, tid)})
    cycle = rf"parent \(ran_under\) cycle through nodes {first} -> {second} -> {first}$"
    _refused(bad, tmp_path, linked.device.path, cycle)


def test_a_host_parent_naming_a_gpu_node_that_it_launched_is_a_cycle(
    linked: LinkedTrace, tmp_path: Path
) -> None:
    """A host ET parent id that names no host op (a root, when the host ET is read) but the
    id the linker gives a GPU op that this op launched: the ET+ would hold a cycle."""
    gpu = next(g for g in linked.gpu_nodes if g.parent_id is not None)
    ops = tuple(msgspec.structs.replace(op, parent_id=gpu.node_id) if op.id == gpu.parent_id
                else op for op in linked.host.ops)  # fmt: skip
    bad = msgspec.structs.replace(linked, host=msgspec.structs.replace(linked.host, ops=ops))
    cycle = f"^{linked.host.path}: parent cycle through nodes {gpu.parent_id} -> {gpu.node_id} -> "
    _refused(bad, tmp_path, linked.host.path, cycle)
