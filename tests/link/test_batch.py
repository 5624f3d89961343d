"""Pairing ranks: the rank a Kineto trace records, else the one its name carries."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path
from typing import Optional

import pytest

from chakra.errors import ChakraError
from chakra.link.batch import device_rank, host_rank, pair_by_rank, rank_in_name

NAMES = {
    "worker3_step_12.1694128201553.pt.trace.json": 3,  # not the millisecond timestamp
    "worker3_step_12.1694128201553.pt.trace.json.gz": 3,
    "worker0_step_12.host_et.json": 0,
    "rank0.host_et.json.gz": 0,
    "rank-5.kineto.json": 5,
    "Rank_7_trace.json": 7,
    "job2_rank11_step4.json": 11,  # a stated rank beats a later number
    "chakra_host_et_4.json": 4,  # the reference's names
    "kineto_12.json": 12,
    "step_12.1694128201553.pt.trace.json": 12,  # the last short number
    "host_3.4242424.json": 3,
    "trace.1694128201553.json": None,  # only a timestamp
    "pid1234567.json": None,  # 7 digits: a pid
    "trace.json": None,
}


@pytest.mark.parametrize("name", sorted(NAMES))
def test_rank_in_name(name: str) -> None:
    assert rank_in_name(name) == NAMES[name]


def kineto(path: Path, rank: Optional[int], at_tail: bool = False) -> Path:
    info = {} if rank is None else {"distributedInfo": {"rank": rank, "world_size": 8}}
    events = {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1}]}
    text = json.dumps({**events, **info} if at_tail else {**info, **events}).encode()
    path.write_bytes(gzip.compress(text) if path.name.endswith(".gz") else text)
    return path


def test_a_device_trace_is_ranked_by_the_rank_it_records(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plain = kineto(tmp_path / "trace.1694128201553.pt.trace.json", 6)
    assert device_rank(plain) == 6
    tail = kineto(tmp_path / "trace.1694128201554.pt.trace.json.gz", 2, at_tail=True)
    assert device_rank(tail) == 2  # no rank in the name: the gzip is read to its end
    with caplog.at_level(logging.WARNING):
        assert device_rank(kineto(tmp_path / "worker1.pt.trace.json", 4)) == 4
    assert "the name says rank 1, the trace's distributedInfo 4: using 4" in caplog.text


def test_without_a_recorded_rank_the_name_serves(tmp_path: Path) -> None:
    path = kineto(tmp_path / "worker1_step_12.1694128201554.pt.trace.json.gz", None)
    assert device_rank(path) == 1
    assert device_rank(kineto(tmp_path / "kineto_9.json", None)) == 9


def test_no_rank_anywhere_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = kineto(tmp_path / "trace.1694128201553.pt.trace.json", None)
    with pytest.raises(ChakraError, match=r"trace\.1694128201553\.pt\.trace\.json: no rank: no "
                                          r"distributedInfo\.rank in the trace"):  # fmt: skip
        device_rank(path)
    with pytest.raises(ChakraError, match=r"host\.1694128201553\.json: no rank in the name"):
        host_rank(tmp_path / "host.1694128201553.json")


def test_two_files_of_one_rank_are_an_error_naming_both(tmp_path: Path) -> None:
    hosts, devices = tmp_path / "hosts", tmp_path / "devices"
    hosts.mkdir()
    devices.mkdir()
    for name in ("worker0_step_12.host_et.json", "worker1_step_12.host_et.json"):
        (hosts / name).write_text('{"schema": "1.1.1", "nodes": []}')
    kineto(devices / "worker0_step_12.1694128201553.pt.trace.json", 0)
    kineto(devices / "worker1_step_12.1694128201554.pt.trace.json", None)
    pairs = pair_by_rank(hosts, devices)
    assert [(p.rank, p.host.name, p.device.name) for p in pairs] == [
        (0, "worker0_step_12.host_et.json", "worker0_step_12.1694128201553.pt.trace.json"),
        (1, "worker1_step_12.host_et.json", "worker1_step_12.1694128201554.pt.trace.json"),
    ]
    kineto(devices / "copy.1694128201555.pt.trace.json", 1)  # records rank 1 too
    both = r"two files for rank 1: \S+\.pt\.trace\.json, \S+\.pt\.trace\.json"
    with pytest.raises(ChakraError, match=both):
        pair_by_rank(hosts, devices)
