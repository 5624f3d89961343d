"""A plain host ET reaches the converter as the linker would write it, without a JSON trip."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from chakra.convert.et_plus_input import EtPlusNode, untimed_node
from chakra.ingest import load_host_trace
from chakra.link.et_plus import host_node_untimed

HOSTS = [
    "param/linear.host_et.json.gz",  # 1.0.3-era layout
    "param/resnet_1gpu.1.0.3.host_et.json.gz",
    "param/resnet_2gpu.1.1.0.host_et.json.gz",  # record_param_comms
    "param/pt2.1.1.1.host_et.json.gz",  # strides
    "chakra/allgather.1.0.2.host_et.json.gz",
]


@pytest.mark.parametrize("name", HOSTS)
def test_untimed_nodes_equal_the_written_ones_read_back(shared_traces: Path, name: str) -> None:
    decode = msgspec.json.Decoder(EtPlusNode, strict=False).decode
    host = load_host_trace(shared_traces / name)
    for op in host.ops:
        written = decode(msgspec.json.encode(host_node_untimed(op)))
        direct = untimed_node(op)
        assert direct == written, op.id
        assert [bytes(direct.inputs), bytes(direct.outputs)] == [
            bytes(written.inputs),
            bytes(written.outputs),
        ]
        assert [type(a.value) for a in direct.attrs] == [type(a.value) for a in written.attrs]
