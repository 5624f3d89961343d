"""A send/recv whose process group pairs this rank with a rank that a ``.et`` cannot hold
(comm_src and comm_dst are int32): the peer is unknown, not an attribute error. Fuzzing
found ``cannot store 9223372036854775807 as int32_val in 'comm_src'``, a line naming no
file; it is now the converter's one line for a send/recv without a known peer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chakra.convert import ConvertOptions, convert_file
from chakra.errors import ChakraError
from chakra.et import NodeType, get_int_attr, read_et
from chakra.link import LinkOptions
from chakra.link.batch import link_files
from chakra.synth import SynthOptions, generate_job


@pytest.fixture(scope="module")
def et_plus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rank 1 of a 2-rank synthetic job, linked: it holds one recv from rank 0."""
    folder = tmp_path_factory.mktemp("p2p")
    rank = generate_job(SynthOptions(seed=1, ranks=2, steps=1, ops_per_step=20), folder).ranks[1]
    path = folder / "rank1.et_plus.json"
    link_files(rank.host_et, rank.kineto, path, LinkOptions())
    return path


def _with_pair(et_plus: Path, folder: Path, ranks: list[int]) -> tuple[Path, int]:
    """A copy of ``et_plus`` whose recv's group lists ``ranks``; the recv's id."""
    document = json.loads(et_plus.read_text())
    recv = next(n for n in document["nodes"] if (n.get("collective") or {}).get("name") == "recv")
    recv["collective"]["pg_ranks"] = ranks
    path = folder / "edited.et_plus.json"
    path.write_text(json.dumps(document))
    return path, recv["id"]


def test_a_peer_rank_beyond_int32_is_an_unknown_peer(et_plus: Path, tmp_path: Path) -> None:
    edited, recv = _with_pair(et_plus, tmp_path, [1, 2**63 - 1])
    with pytest.raises(ChakraError) as raised:
        convert_file(edited, tmp_path / "out.et", ConvertOptions(rank=1, require_peers=True))
    assert str(raised.value).startswith(f"{edited}: node {recv} (1 send/recv in all): the peer")
    assert not (tmp_path / "out.et").exists()


def test_the_largest_int32_peer_is_kept(et_plus: Path, tmp_path: Path) -> None:
    edited, recv = _with_pair(et_plus, tmp_path, [1, 2**31 - 1])
    convert_file(edited, tmp_path / "out.et", ConvertOptions(rank=1, require_peers=True))
    node = next(n for n in read_et(tmp_path / "out.et")[1] if n.id == recv)
    assert node.type == NodeType.COMM_RECV_NODE
    assert get_int_attr(node, "comm_src") == 2**31 - 1
    assert get_int_attr(node, "comm_dst") == 1
