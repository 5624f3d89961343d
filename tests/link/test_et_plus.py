"""The ET+ writer: written by two processes, the same bytes as by one, wherever the nodes
are split (host nodes, the replay threads' roots, GPU nodes), compressed or not."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import pytest

from chakra.ingest import load_device_trace, load_host_trace
from chakra.link import LinkedTrace, LinkOptions, et_plus, link_traces
from chakra.link.et_plus import write_et_plus
from chakra.synth import SynthOptions, generate_job


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory) -> LinkedTrace:
    """A rank with host nodes, replay threads' roots (a gloo worker the host ET did not
    record) and GPU nodes."""
    options = SynthOptions(
        seed=6, ranks=2, steps=2, ops_per_step=50, worker_threads=True, unrecorded_gloo_ranks=(0,)
    )
    rank = generate_job(options, tmp_path_factory.mktemp("job")).ranks[0]
    trace = link_traces(
        load_host_trace(rank.host_et), load_device_trace(rank.kineto), LinkOptions()
    )
    assert trace.replay_threads and trace.gpu_nodes and trace.edges
    return trace


def _count(trace: LinkedTrace) -> int:
    return len(trace.host.ops) + len(trace.replay_threads) + len(trace.gpu_nodes)


def test_the_nodes_from_any_position_continue_the_first(linked: LinkedTrace) -> None:
    whole = list(et_plus._nodes(linked))
    assert len(whole) == _count(linked)
    for split in range(len(whole) + 1):
        assert list(et_plus._nodes(linked, 0, split)) + list(et_plus._nodes(linked, split)) == whole


@pytest.mark.parametrize("name", ["linked.et_plus.json", "linked.et_plus.json.gz"])
def test_two_processes_write_the_same_bytes(
    linked: LinkedTrace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    one = tmp_path / "one" / name
    one.parent.mkdir()
    write_et_plus(linked, one)
    total = _count(linked)
    hosts = len(linked.host.ops)
    # the split inside the host nodes, at the replay roots, at the GPU nodes' first, last
    for split in sorted({1, hosts - 1, hosts, hosts + 1, total - len(linked.gpu_nodes), total - 1}):
        monkeypatch.setattr(et_plus, "FIRST_SHARE", split / total)
        two = tmp_path / f"two-{split}" / name
        two.parent.mkdir()
        write_et_plus(linked, two, processes=2)
        assert (
            two.read_bytes() == one.read_bytes()
            if not name.endswith(".gz")
            else (gzip.decompress(two.read_bytes()) == gzip.decompress(one.read_bytes()))
        )
    assert list(scratch.iterdir()) == []
    text = gzip.decompress(one.read_bytes()) if name.endswith(".gz") else one.read_bytes()
    assert len(json.loads(text)["nodes"]) == total


def test_dependencies_written_in_pieces_are_the_whole_list(
    linked: LinkedTrace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(et_plus, "_EDGES_AT_ONCE", 3)
    path = tmp_path / "linked.et_plus.json"
    write_et_plus(linked, path)
    written = json.loads(path.read_bytes())["chakra_link"]
    expected = json.loads(et_plus._ENCODER.encode(et_plus._metadata(linked)))
    assert written == expected
    assert len(written["dependencies"]) == len(linked.edges) > 3


def test_a_one_node_trace_is_written_by_one_process(
    linked: LinkedTrace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import msgspec

    host = msgspec.structs.replace(linked.host, ops=linked.host.ops[:1])
    alone = msgspec.structs.replace(
        linked, host=host, gpu_nodes=(), replay_threads=(), edges=(), matches={}
    )

    def no_fork(*args: object) -> None:
        raise AssertionError("a second process for one node")

    monkeypatch.setattr(et_plus, "_write_in_two", no_fork)
    path = tmp_path / "one.et_plus.json"
    write_et_plus(alone, path, processes=2)
    assert [n["id"] for n in json.loads(path.read_bytes())["nodes"]] == [host.ops[0].id]
