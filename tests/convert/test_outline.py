"""The converter's two readings of our ET+: an outline for the graph, then each node's
payload again while writing. The ``.et`` must equal the one built from whole nodes."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from chakra.convert import ConvertOptions, convert_et_plus, convert_file, load_et_plus
from chakra.convert.classify import reads_payload
from chakra.convert.et_plus_input import with_payloads
from chakra.errors import TraceFormatError
from chakra.et import read_et, write_et
from chakra.et.schema import NodeType
from chakra.link import LinkOptions
from chakra.link.batch import link_files
from chakra.synth import SynthOptions, generate_job
from tests.conftest import REPO_ROOT

GLOO = REPO_ROOT / "tests" / "data" / "pytorch213" / "gloo_2rank"


def linked(tmp_path: Path, host: Path, device: Path, name: str = "rank0.json") -> Path:
    et_plus = tmp_path / name
    link_files(host, device, et_plus, LinkOptions())
    return et_plus


def from_whole_nodes(et_plus: Path, out: Path) -> bytes:
    """The .et written from the whole nodes, held in memory (no outline)."""
    graph = convert_et_plus(load_et_plus(et_plus), ConvertOptions())
    write_et(out, graph.metadata, graph.nodes)
    return out.read_bytes()


def comm_nodes(path: Path) -> list:
    comm = {NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE}
    _, nodes = read_et(path)
    return [node for node in nodes if node.type in comm]


@pytest.mark.parametrize("name", ["rank0.json", "rank0.json.gz"])
def test_gloo_rank_converts_to_the_same_bytes_from_its_outline(tmp_path: Path, name: str) -> None:
    et_plus = linked(tmp_path, GLOO / "rank0.host_et.json.gz", GLOO / "rank0.kineto.json.gz", name)
    outline = load_et_plus(et_plus, keep_whole=reads_payload)
    assert outline.outline
    stripped = [n for n in outline.nodes if not reads_payload(n)]
    assert stripped and all(
        bytes(n.inputs) == b"null" and n.kineto_thread is None for n in stripped
    )
    assert all([a.name for a in n.attrs] in (["tid"], []) for n in stripped)
    convert_file(et_plus, tmp_path / "outline.et")
    assert (tmp_path / "outline.et").read_bytes() == from_whole_nodes(et_plus, tmp_path / "w.et")
    assert len(comm_nodes(tmp_path / "outline.et")) >= 4  # the gloo collectives kept their sizes
    assert all(any(a.name == "comm_size" and a.int64_val > 0 for a in n.attr)
               for n in comm_nodes(tmp_path / "outline.et") if "barrier" not in n.name)  # fmt: skip


def test_nccl_synthetic_rank_converts_to_the_same_bytes_from_its_outline(tmp_path: Path) -> None:
    summary = generate_job(SynthOptions(seed=3, ranks=2, ops_per_step=150), tmp_path)
    rank = summary.ranks[1]
    et_plus = linked(tmp_path, rank.host_et, rank.kineto)
    convert_file(et_plus, tmp_path / "outline.et")
    assert (tmp_path / "outline.et").read_bytes() == from_whole_nodes(et_plus, tmp_path / "w.et")
    assert comm_nodes(tmp_path / "outline.et")


def test_payloads_are_the_whole_nodes_fields(tmp_path: Path) -> None:
    et_plus = linked(tmp_path, GLOO / "rank1.host_et.json.gz", GLOO / "rank1.kineto.json.gz")
    whole = load_et_plus(et_plus)
    pairs = list(with_payloads(load_et_plus(et_plus, keep_whole=reads_payload)))
    assert [node.id for node, _ in pairs] == [node.id for node in whole.nodes]
    for (_, payload), node in zip(pairs, whole.nodes):
        assert (payload.inputs, payload.outputs, payload.attrs) == (node.inputs, node.outputs,
                                                                    node.attrs)  # fmt: skip


def test_ids_out_of_order_load_whole(tmp_path: Path) -> None:
    et_plus = linked(tmp_path, GLOO / "rank0.host_et.json.gz", GLOO / "rank0.kineto.json.gz")
    lines = et_plus.read_bytes().split(b"\n")
    lines[3], lines[4] = lines[4], lines[3]  # the first two nodes, both followed by a comma
    et_plus.write_bytes(b"\n".join(lines))
    trace = load_et_plus(et_plus, keep_whole=reads_payload)
    assert not trace.outline and trace == load_et_plus(et_plus)
    convert_file(et_plus, tmp_path / "out.et")
    assert (tmp_path / "out.et").read_bytes() == from_whole_nodes(et_plus, tmp_path / "w.et")


@pytest.mark.parametrize("change", ["cut", "other_ids", "more", "not_ours"])
def test_a_file_changed_between_the_readings_is_reported(tmp_path: Path, change: str) -> None:
    et_plus = linked(tmp_path, GLOO / "rank0.host_et.json.gz", GLOO / "rank0.kineto.json.gz")
    trace = load_et_plus(et_plus, keep_whole=reads_payload)
    lines = et_plus.read_bytes().split(b"\n")
    if change == "cut":
        lines = lines[:10]
    elif change == "other_ids":
        lines[5] = lines[5].replace(b'{"id":', b'{"id":9', 1)
    elif change == "more":
        lines[-2:-1] = [lines[-3], lines[-2]]  # a node line repeated before the closing line
    else:
        lines = [b"{", *lines[3:]]
    et_plus.write_bytes(b"\n".join(lines))
    with pytest.raises(TraceFormatError, match="changed while it was converted"):
        list(with_payloads(trace))


def test_the_cli_reports_a_changed_file_without_output(tmp_path: Path, monkeypatch) -> None:
    from chakra.convert import converter

    et_plus = linked(tmp_path, GLOO / "rank0.host_et.json.gz", GLOO / "rank0.kineto.json.gz")
    load = converter.load_et_plus

    def load_then_cut(path, keep_whole=None):
        trace = load(path, keep_whole)
        Path(path).write_bytes(gzip.compress(b"{}"))
        return trace

    monkeypatch.setattr(converter, "load_et_plus", load_then_cut)
    with pytest.raises(TraceFormatError, match=str(et_plus)):
        convert_file(et_plus, tmp_path / "out.et")
    assert not (tmp_path / "out.et").exists()
