"""A linked trace reaches the converter in memory with the same result as through its file."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra.convert import ConvertOptions, convert_et_plus, load_et_plus
from chakra.ingest import load_device_trace, load_host_trace
from chakra.link import LinkOptions, link_traces
from chakra.link.et_plus import as_et_plus, write_et_plus

PAIRS = [
    ("hta/simple_add.host_et.json.gz", "hta/simple_add.kineto.json.gz"),
    ("param/linear.host_et.json.gz", "param/linear.kineto.json.gz"),
]


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p[0].split("/")[1].split(".")[0])
def test_in_memory_equals_through_the_file(
    shared_traces: Path, tmp_path: Path, pair: tuple[str, str]
) -> None:
    host, device = (load_host_trace(shared_traces / pair[0]),
                    load_device_trace(shared_traces / pair[1]))  # fmt: skip
    linked = link_traces(host, device, LinkOptions())
    path = tmp_path / "linked.et_plus.json"
    write_et_plus(linked, path)
    from_file = convert_et_plus(load_et_plus(path), ConvertOptions())
    in_memory = convert_et_plus(as_et_plus(linked), ConvertOptions())
    assert [n.SerializeToString() for n in in_memory.nodes] == [
        n.SerializeToString() for n in from_file.nodes
    ]
    assert in_memory.report == from_file.report
    assert in_memory.metadata.SerializeToString() == from_file.metadata.SerializeToString()
