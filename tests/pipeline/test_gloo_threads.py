"""The 2-rank gloo recording (PyTorch 2.13): gloo work replayed on the worker threads that ran
it, no dependency against the measured times, both ranks simulated together."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

from chakra.et import EtReader, get_int_attr
from chakra.pipeline import RankFiles, run_pipeline
from tests.conftest import REPO_ROOT

GLOO = REPO_ROOT / "tests" / "data" / "pytorch213" / "gloo_2rank"


def _kineto_threads(rank: int) -> dict[str, set]:
    """From the raw Kineto JSON: the OS threads each gloo:* record function ran on."""
    with gzip.open(GLOO / f"rank{rank}.kineto.json.gz") as stream:
        events = json.load(stream)["traceEvents"]
    main = next(e["tid"] for e in events if e.get("name", "").startswith("ProfilerStep#"))
    threads: dict[str, set] = defaultdict(set)
    for event in events:
        if event.get("name", "").startswith("gloo:"):
            threads[event["name"]].add("main" if event["tid"] == main else "worker")
    return threads


def test_gloo_work_stays_on_worker_threads(tmp_path: Path) -> None:
    ranks = [RankFiles(r, GLOO / f"rank{r}.host_et.json.gz", GLOO / f"rank{r}.kineto.json.gz")
             for r in (0, 1)]  # fmt: skip
    result = run_pipeline(ranks, tmp_path)
    report = json.loads(result.report.read_text())
    for rank in report["ranks"]:
        r = rank["rank"]
        assert rank["link"]["contradictions"] == {} and rank["link"]["rejected"] == {}
        assert rank["link"]["host_ops_on_other_threads"] == 8  # the 8 gloo:* ops on workers
        assert rank["convert"]["contradicting_edges_dropped"] == 0
        kineto = _kineto_threads(r)
        with EtReader(tmp_path / f"workload.{r}.et") as reader:
            nodes = list(reader)
        main_tid = next(get_int_attr(n, "tid") for n in nodes if n.name.startswith("ProfilerStep"))
        for node in nodes:
            if node.name.startswith("gloo:") and get_int_attr(node, "tid") is not None:
                where = "main" if get_int_attr(node, "tid") == main_tid else "worker"
                assert kineto[node.name] == {where} or where in kineto[node.name], node.name
        on_workers = {n.name for n in nodes if n.name.startswith("gloo:")
                      and get_int_attr(n, "tid") not in (None, main_tid)}  # fmt: skip
        assert on_workers >= {"gloo:all_reduce", "gloo:all_gather", "gloo:barrier"}
        # no edge says a node waited for something that measurably ended after it started
        by_id = {n.id: n for n in nodes}
        for node in nodes:
            if node.name in ("[delay]", "[idle]") or not node.start_time_micros:
                continue
            for dep in node.data_deps:
                src = by_id[dep]
                if src.start_time_micros and src.name not in ("[delay]", "[idle]"):
                    assert src.start_time_micros <= node.start_time_micros + 1, (src.id, node.id)
        # simulated together (collectives meet) close to the measured makespan
        assert abs(rank["simulation"]["error_pct"]) < 0.5  # replays to its measured time
        # what the graph leaves unexplained (delays, idle time) is reported, not hidden
        assert rank["simulation"]["model_only_error_pct"] < 0
        assert rank["simulation"]["unexplained_us"] > 0
