"""Dependencies inferred from timing (:mod:`chakra.link.inferred`): waits whose cause the
trace does not record, found from a start that coincides with another op's end."""

from __future__ import annotations

import json
from pathlib import Path

from chakra.convert import ConvertOptions, convert_et_plus
from chakra.ingest import load_device_trace, load_host_trace
from chakra.ingest.device_model import KinetoEvent
from chakra.ingest.edges import EARLY_END
from chakra.link import LinkOptions, link_traces
from chakra.link.et_plus import as_et_plus
from chakra.link.evidence import HostTimeline
from chakra.link.inferred import THREAD_RESUME, is_inferred, thread_resume_edges
from chakra.link.nesting import ThreadNesting
from chakra.simulate import ScaleRule, build_graph, simulate, what_if
from chakra.synth import SynthOptions, generate_job
from tests.simulate.test_what_if_truth import true_makespan


def _without_cuda_sync(folder: Path, ranks: int) -> None:
    """Drop the CUPTI ``cuda_sync`` records, as older profilers write no such thing."""
    for rank in range(ranks):
        path = folder / f"rank{rank}.kineto.json"
        document = json.loads(path.read_text())
        events = document["traceEvents"]
        document["traceEvents"] = [e for e in events if e.get("cat") != "cuda_sync"]
        assert len(document["traceEvents"]) < len(events)
        path.write_text(json.dumps(document))


def _link(folder: Path, rank: int, **options: bool):
    host = load_host_trace(folder / f"rank{rank}.host_et.json")
    device = load_device_trace(folder / f"rank{rank}.kineto.json")
    return link_traces(host, device, LinkOptions(**options))


def test_event_waits_without_cuda_sync_records_are_inferred(tmp_path: Path) -> None:
    options = SynthOptions(seed=3, ranks=1, steps=2, ops_per_step=300)
    generate_job(options, tmp_path / "recorded")
    recorded = {(e.src, e.dst) for e in _link(tmp_path / "recorded", 0).edges
                if e.kind.value == "event_wait"}  # fmt: skip
    generate_job(options, tmp_path / "old")
    _without_cuda_sync(tmp_path / "old", 1)
    linked = _link(tmp_path / "old", 0)
    inferred = [e for e in linked.edges if is_inferred(e) and e.kind.value == "event_wait"]
    # and each step's cudaStreamSynchronize, resolved to the copy it returned at (not every
    # stream's last op); the event synchronize did not block (no op ended during it)
    assert linked.report.inferred == {"event_wait": len(inferred), "host_sync": 2}
    found = {(e.src, e.dst) for e in inferred}
    # true waits (28 of 28 here); the 26 true waits not found had ended before their op
    # was ready anyway (its launch or its stream came later), so their ends show nothing
    assert len(found & recorded) >= 20
    assert len(found & recorded) >= 0.9 * len(found)
    assert not any(is_inferred(e) for e in _link(tmp_path / "old", 0, inferred=False).edges)


def test_a_slower_network_moves_ranks_without_cuda_sync_records(tmp_path: Path) -> None:
    options = SynthOptions(seed=3, ranks=2, steps=2, ops_per_step=300)
    generate_job(options, tmp_path / "speed1")
    _without_cuda_sync(tmp_path / "speed1", 2)
    generate_job(SynthOptions(**{**options.__dict__, "network_factor": 2.0}), tmp_path / "net2")
    truth = true_makespan(tmp_path / "net2") / true_makespan(tmp_path / "speed1")
    errors = {}
    for inferred in (False, True):
        graphs = [
            build_graph(convert_et_plus(as_et_plus(linked), ConvertOptions()).nodes, rank)
            for rank in range(2)
            for linked in (_link(tmp_path / "speed1", rank, inferred=inferred),)
        ]
        replayed = max(simulate(graphs).makespans())
        slower = max(what_if(graphs, [ScaleRule.parse("comm=2")]).makespans())
        errors[inferred] = slower / replayed - truth
    # without the inferred waits the collectives' ends never reach the compute streams
    assert abs(errors[False]) > 0.003
    assert abs(errors[True]) < 0.001


def _event(name: str, tid: int, ts: float, dur: float) -> KinetoEvent:
    return KinetoEvent("X", "cpu_op", name, 1, tid, ts, dur)


def test_a_wait_recorded_as_the_parents_self_time_is_inferred() -> None:
    # the main thread (1) inside "## step 1 ##": c10d::allreduce_ hands the work to a gloo
    # worker (2), then blocks in the annotation's own time until gloo:all_reduce ends at
    # 1000, resuming 20 us later with aten::add_; aten::mul_ follows after 10 us of work
    main = [_event("## step 1 ##", 1, 0, 2000), _event("c10d::allreduce_", 1, 10, 30),
            _event("aten::add_", 1, 1020, 50), _event("aten::mul_", 1, 1080, 40)]  # fmt: skip
    worker = [_event("gloo:all_reduce", 2, 45, 955)]
    nestings = {(1, 1): ThreadNesting(main), (1, 2): ThreadNesting(worker)}
    host_of = {id(e): host_id for host_id, e in enumerate([*main, *worker], start=10)}
    timeline = HostTimeline(nestings, host_of)
    edges = thread_resume_edges(nestings, host_of, timeline.top_level())
    # gloo:all_reduce (14) -> aten::add_ (12); not aten::mul_ (no wait before it)
    assert [(e.src, e.dst, e.via_api) for e in edges] == [(14, 12, THREAD_RESUME)]
    # resuming later than the tolerance (1 ms) after the end is no evidence
    late = [*main[:2], _event("aten::add_", 1, 2050, 50)]
    nestings[(1, 1)] = ThreadNesting(late)
    host_of = {id(e): host_id for host_id, e in enumerate([*late, *worker], start=10)}
    assert thread_resume_edges(nestings, host_of, HostTimeline(nestings, host_of).top_level()) == []
    # nor is an end after which the thread stayed idle more than a quarter as long as before
    # it: idle from 40 (c10d::allreduce_ ended) to 300, the worker's op ended at 150
    early = [*main[:2], _event("aten::add_", 1, 300, 50)]
    short = [_event("gloo:all_reduce", 2, 45, 105)]
    nestings = {(1, 1): ThreadNesting(early), (1, 2): ThreadNesting(short)}
    host_of = {id(e): host_id for host_id, e in enumerate([*early, *short], start=10)}
    assert thread_resume_edges(nestings, host_of, HostTimeline(nestings, host_of).top_level()) == []


def test_a_collective_that_closed_after_the_waiting_thread_resumed() -> None:
    # the main thread waited from 40 on in its parent's own time and resumed at 1000, while
    # the worker's gloo:all_reduce record function closed only at 1150 (gloo closes it a
    # while after the work completed): the collective is taken to have completed at 1000
    main = [_event("## step 1 ##", 1, 0, 2000), _event("c10d::allreduce_", 1, 10, 30),
            _event("aten::add_", 1, 1000, 50)]  # fmt: skip
    worker = [_event("gloo:all_reduce", 2, 45, 1105)]
    nestings = {(1, 1): ThreadNesting(main), (1, 2): ThreadNesting(worker)}
    host_of = {id(e): host_id for host_id, e in enumerate([*main, *worker], start=10)}
    edges = thread_resume_edges(nestings, host_of, HostTimeline(nestings, host_of).top_level())
    assert [(e.src, e.dst, e.via_api, e.via_ts_us) for e in edges] == [(13, 12, EARLY_END, 1000)]
    # not when it closed long after (more than a quarter of the wait)
    worker[0] = _event("gloo:all_reduce", 2, 45, 1400)
    nestings[(1, 2)] = ThreadNesting(worker)
    host_of = {id(e): host_id for host_id, e in enumerate([*main, *worker], start=10)}
    assert thread_resume_edges(nestings, host_of, HostTimeline(nestings, host_of).top_level()) == []


def _resumes(main: list[KinetoEvent], worker: list[KinetoEvent]) -> list[tuple[int, int]]:
    nestings = {(1, 1): ThreadNesting(main), (1, 2): ThreadNesting(worker)}
    host_of = {id(e): host_id for host_id, e in enumerate([*main, *worker], start=10)}
    edges = thread_resume_edges(nestings, host_of, HostTimeline(nestings, host_of).top_level())
    return [(e.src, e.dst) for e in edges]


def test_a_slow_wake_up_after_a_long_wait_is_still_a_resume() -> None:
    # 4 gloo ranks on 2 cores (gloo4_fast_r2, rank 0): a blocking all_reduce of 28.7 ms, and
    # the main thread ran again 5.5 ms after it (no free core): that wait is an edge
    def job(wait_us: float, wake_us: float) -> list[tuple[int, int]]:
        main = [_event("## step 3 ##", 1, 0, 200_000), _event("c10d::allreduce_", 1, 10, 30),
                _event("c10d::allreduce_", 1, 45 + wait_us + wake_us, 150)]  # fmt: skip
        return _resumes(main, [_event("gloo:all_reduce", 2, 45, wait_us)])

    assert job(28_700, 5_500) == [(13, 12)]
    # the same wake-up after a wait only 3 times as long is no evidence
    assert job(16_500, 5_500) == []
    # nor a wake-up of more than 20 ms, however long the wait
    assert job(150_000, 21_000) == []
