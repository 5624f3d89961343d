"""Peeking at a trace's kind and rank without loading it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from chakra.ingest import load_device_trace
from chakra.ingest.detect import PEEK_BYTES, TraceKind, peek_kind, peek_rank, sniff_kind

EVENT = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2}


def kineto_text(rank_at: str, events: int = 3, info: Any = None) -> str:
    """A Kineto document with ``distributedInfo`` at its head, its tail, or nowhere."""
    info = {"backend": "nccl", "rank": 5, "world_size": 8} if info is None else info
    body = '"traceEvents": [' + ", ".join([json.dumps(EVENT)] * events) + "]"
    if rank_at == "head":
        return '{"schemaVersion": 1, "distributedInfo": ' + json.dumps(info) + ", " + body + "}"
    if rank_at == "tail":
        return '{"schemaVersion": 1, ' + body + ', "distributedInfo": ' + json.dumps(info) + "}"
    return '{"schemaVersion": 1, ' + body + "}"


def write(path: Path, text: str) -> Path:
    path.write_bytes(gzip.compress(text.encode()) if path.suffix == ".gz" else text.encode())
    return path


BIG = PEEK_BYTES // len(json.dumps(EVENT)) + 10  # events enough to push the tail past the head


@pytest.mark.parametrize("name", ["k.json", "k.json.gz"])
@pytest.mark.parametrize("events", [3, BIG])
@pytest.mark.parametrize("rank_at", ["head", "tail"])
def test_the_recorded_rank_is_found_at_the_head_or_the_tail(
    tmp_path: Path, name: str, events: int, rank_at: str
) -> None:
    path = write(tmp_path / name, kineto_text(rank_at, events))
    assert peek_rank(path) == 5
    assert load_device_trace(path).rank == 5  # what the loader reads too


def test_a_big_gzip_tail_is_not_read_when_told_not_to(tmp_path: Path) -> None:
    path = write(tmp_path / "k.json.gz", kineto_text("tail", BIG))
    assert peek_rank(path, whole_gzip=False) is None
    head = write(tmp_path / "h.json.gz", kineto_text("head", BIG))
    assert peek_rank(head, whole_gzip=False) == 5


@pytest.mark.parametrize(
    "text", [kineto_text("none"), kineto_text("head", info={"backend": "nccl"}),
             kineto_text("tail", info={"rank": "3"})],
)  # fmt: skip
def test_no_rank_recorded(tmp_path: Path, text: str) -> None:
    assert peek_rank(write(tmp_path / "k.json", text)) is None


def test_peeked_ranks_of_real_traces_match_the_loader(shared_traces: Path) -> None:
    paths = sorted((shared_traces / "hta").glob("*.kineto.json.gz"))
    peeked = {p.name: peek_rank(p) for p in paths}
    assert peeked == {p.name: load_device_trace(p).rank for p in paths}
    # simple_add records its rank after its events, alexnet and nccl_data before them
    assert peeked["simple_add.kineto.json.gz"] == peeked["alexnet.kineto.json.gz"] == 0


KINDS = {
    "host.json": ('{"schema": "1.1.1-chakra.0.0.4", "pid": 7, "nodes": []}', TraceKind.HOST_ET),
    "kineto.json": (kineto_text("none"), TraceKind.KINETO),
    "et_plus.json": ('{"schema": "1.0.1", "chakra_link": {}, "nodes": []}', TraceKind.ET_PLUS),
    "other.json": ('{"a": 1}', None),
}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_peek_kind(tmp_path: Path, name: str) -> None:
    text, kind = KINDS[name]
    assert peek_kind(write(tmp_path / name, text)) is kind
    assert peek_kind(write(tmp_path / f"{name}.gz", text)) is kind


def test_a_file_of_blanks_is_taken_as_json_not_as_a_chakra_et(tmp_path: Path) -> None:
    # 0x20 is also a protobuf varint (a 32-byte message): as an .et it would "parse"
    path = tmp_path / "blanks.json"
    path.write_bytes(b" " * 1000)
    assert sniff_kind(path) is TraceKind.HOST_ET
