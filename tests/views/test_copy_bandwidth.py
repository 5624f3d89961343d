"""Memory-copy bandwidth per copy kind, sizes from the tensor values of a written .et."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra.et import GlobalMetadata, write_et
from chakra.simulate import load_graph, simulate
from chakra.simulate.replay import SimOptions
from chakra.views.copy_bandwidth import (
    copy_kind,
    rank_copy_bandwidth,
    read_copy_sizes,
    tensor_bytes,
)
from tests.simulate.test_engine import node
from tests.views.test_launch_stats import timed


def copy(node_id: int, duration: int, name: str, outputs: str, start_us: int) -> object:
    out = timed(node(node_id, duration, (1,), stream=7), start_us, name)
    out.outputs.values = outputs
    return out


def test_bandwidth_per_kind_of_sized_copies(tmp_path: Path) -> None:
    # two HtoD copies of 4,000 and 8,000 bytes taking 20 and 40 µs: 0.2 GB/s; a DtoH copy
    # whose values hold no tensor: counted, unsized
    nodes = [timed(node(1, 10), 100),
             copy(2, 20, "Memcpy HtoD (Pinned -> Device)", '[[1,2,0,1000,4,"cuda:0"]]', 110),
             copy(3, 40, "Memcpy HtoD (Pinned -> Device)", '[[3,4,0,2000,4,"cuda:0"]]', 130),
             copy(4, 5, "Memcpy DtoH (Device -> Pageable)", "[]", 170)]  # fmt: skip
    path = tmp_path / "w.0.et"
    write_et(path, GlobalMetadata(version="0.0.4"), nodes)
    result = simulate([load_graph(path, 0)], SimOptions(explain=False))
    dtoh, htod = rank_copy_bandwidth(result, 0, read_copy_sizes(path))
    assert (htod.kind, htod.copies, htod.unsized, htod.size_bytes) == ("HtoD", 2, 0, 12000)
    assert htod.measured_us == htod.simulated_us == 60
    assert htod.measured_gbps == htod.simulated_gbps == pytest.approx(0.2)
    assert (dtoh.kind, dtoh.copies, dtoh.unsized, dtoh.size_bytes) == ("DtoH", 1, 1, 0)
    assert dtoh.measured_gbps is None and dtoh.simulated_gbps is None


@pytest.mark.parametrize(
    ("values", "size"),
    [('[[1,2,0,10,2,"cuda:0"]]', 20), ('[true, [1,2,0,3,8,"cpu"]]', 24), ("[]", -1),
     ("not json", -1), ('[[1,2,0,-1,4,"x"]]', -1), ("", -1)],
)  # fmt: skip
def test_tensor_bytes(values: str, size: int) -> None:
    assert tensor_bytes(values) == size


def test_copy_kind() -> None:
    assert copy_kind("Memcpy DtoD (Device -> Device)") == "DtoD"
    assert copy_kind("Memset (Device)") is None and copy_kind("aten::copy_") is None
