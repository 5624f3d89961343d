"""Each replay thread keeps the Kineto thread it was recorded on (ET+
``chakra_link.threads``, the ``.et``'s ``threads`` metadata) and the timeline names its
track after it. Checked against the raw JSON of the real 2-rank gloo recording: the
Kineto thread of the ops that carry each host ``tid`` (by record-function id) and the
thread's last ``thread_name`` record."""

from __future__ import annotations

import gzip
import json
import logging
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from chakra.convert import ConvertOptions, convert_et_plus
from chakra.et import write_et
from chakra.et.schema import GlobalMetadata
from chakra.et.threads import get_threads, set_threads
from chakra.ingest import load_device_trace, load_host_trace
from chakra.link import LinkOptions, link_traces
from chakra.link.et_plus import as_et_plus
from chakra.simulate import simulate
from chakra.simulate.run import load_graph
from chakra.views.timeline import chrome_trace
from tests.link.test_unrecorded_threads import GLOO, _without_thread


def _raw(name: str) -> dict:
    with gzip.open(GLOO / name) as raw:
        return json.loads(raw.read())


def _expected(host: dict, kineto: dict) -> dict[int, tuple[int, str]]:
    """Host tid -> (the Kineto tid most of its ops ran on, that thread's last name)."""
    events = kineto["traceEvents"]
    rf_id = "Record function id"
    ran_on = {e["args"][rf_id]: e["tid"] for e in events
              if e.get("cat") == "cpu_op" and rf_id in e.get("args", {})}  # fmt: skip
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}  # fmt: skip
    votes: dict[int, Counter] = defaultdict(Counter)
    for node in host["nodes"]:
        attrs = {a["name"]: a["value"] for a in node["attrs"]}
        if attrs.get("rf_id") in ran_on:
            votes[attrs["tid"]][ran_on[attrs["rf_id"]]] += 1
    return {t: (v.most_common(1)[0][0], names[v.most_common(1)[0][0]]) for t, v in votes.items()}


def test_each_replay_thread_keeps_its_kineto_thread_and_the_timeline_names_it(
    tmp_path: Path,
) -> None:
    host = load_host_trace(GLOO / "rank0.host_et.json.gz")
    linked = link_traces(host, load_device_trace(GLOO / "rank0.kineto.json.gz"), LinkOptions())
    threads = as_et_plus(linked).link.threads
    expected = _expected(_raw("rank0.host_et.json.gz"), _raw("rank0.kineto.json.gz"))
    assert {t.tid: (t.kineto_tid, t.name) for t in threads} == expected
    assert len({t.kineto_tid for t in threads}) == 3  # python and two pt_gloo_runloop
    converted = convert_et_plus(as_et_plus(linked), ConvertOptions(rank=0))
    path = tmp_path / "r.0.et"
    write_et(path, converted.metadata, converted.nodes)
    tracks = {e["args"]["name"] for e in chrome_trace(simulate([load_graph(path, 0)]))
              ["traceEvents"] if e["name"] == "thread_name"}  # fmt: skip
    for tid, (kineto_tid, name) in expected.items():
        assert f"thread {tid} · {name}" in tracks and str(kineto_tid) in name


def test_a_thread_the_host_et_missed_keeps_its_kineto_thread(tmp_path: Path) -> None:
    """The replay thread made for a gloo worker the host ET has no thread for (see
    test_unrecorded_threads) is paired with that worker's Kineto thread."""
    host_path, dropped_tid = _without_thread(43, tmp_path)
    device = load_device_trace(GLOO / "rank0.kineto.json.gz")
    linked = link_traces(load_host_trace(host_path), device, LinkOptions())
    (made,) = linked.replay_threads
    threads = {t.tid: t for t in as_et_plus(linked).link.threads}
    whole = _expected(_raw("rank0.host_et.json.gz"), _raw("rank0.kineto.json.gz"))
    assert threads[made.tid].kineto_tid == whole[dropped_tid][0]
    assert "pt_gloo_runloop" in threads[made.tid].name


def test_an_unreadable_threads_record_names_no_track_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metadata = GlobalMetadata()
    assert get_threads(metadata, "x.et") == []
    set_threads(metadata, [])
    assert not metadata.attr
    metadata.attr.add(name="threads", string_val='[{"tid": "one"}]')
    with caplog.at_level(logging.WARNING):
        assert get_threads(metadata, "x.et") == []
    assert "x.et" in caplog.text and "threads" in caplog.text
