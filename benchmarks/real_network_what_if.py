"""Network what-ifs against real recordings: gloo jobs recorded at a fast and a slow network.

The recordings (``tests/data/pytorch213/record_gloo_network.py``) are folders
``gloo{N}_{fast|slow}_r{k}`` of ``rank{r}.host_et.json.gz`` + ``rank{r}.kineto.json.gz``: the
same DDP job on N ranks, its loopback capped at 1 Gbit/s (fast) or 200 Mbit/s (slow). For each
recording this links and converts every rank in memory with the library and prints, per rank:

* the link: host ops matched / all, unmatched and rejected matches, ops on other threads;
* the replay of all ranks together (``simulate``); when that fails (a deadlock), the one-line
  error, and every rank is then replayed alone (its collectives meet only itself, with their
  recorded times): the columns say which;
* the replay error (simulated vs measured makespan);
* ``comm=0``: how much shorter the rank gets with every collective free, next to the time its
  main thread measurably waited on communication in the Kineto trace (below);

then per world size, the slow recording predicted from the fast one: ``comm=F`` on each fast
repeat, with F the measured ratio slow/fast of the gloo op durations (each recording's mean
per rank of the summed ``gloo:*`` durations; median of the repeats) and F = 5, the bandwidth
ratio; and ``--network ring`` timings at the two rates (0.125 vs 0.025 GB/s; the whole job shares
the one capped link, so per-rank bandwidth is lower still); against the true change: the median
slow step time over the median fast one (a step: a ``ProfilerStep#`` span, mean over steps and
ranks).

Measured communication wait (from the raw Kineto JSON, without the library): the main thread
(the one running ``ProfilerStep#``) waits for gloo in calls that record nothing (``work.wait()``,
DDP's wait for its buckets at the end of backward), so a wait is a gap: time inside the
recorded steps that no main-thread ``cpu_op`` covers while a ``gloo:*`` op runs on a worker
thread. Gaps shorter than ``MIN_GAP_US`` are left out (interpreter time between ops, which
also happens while a gloo op runs in the background); the estimate with every gap is printed
beside it (``all gaps``). It undercounts a wait hidden inside a recorded op and overcounts
Python work done between ops while a collective is in flight. ``net wait`` leaves out the
part of each collective before its last member started (time a rank waited for a peer still
busy elsewhere, which a free network does not remove). ``peer@0`` is the other side, from the
replay: the time the rank's critical chain spends inside collectives under ``comm=0``, where
a collective costs nothing and a rank waits only for a peer still computing; the measured
skew between ranks can grow there (work the transfers hid comes out), so ``comm=0`` may free
less than ``net wait`` when ranks are uneven (4 ranks sharing 2 cores).

    python benchmarks/real_network_what_if.py [--recordings DIR]

Default DIR: /work/recordings, else tests/data/pytorch213/gloo_net (one repeat of each).
Nothing here raises on a failure of the code under test: every failure is printed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional

from chakra.convert import ConvertOptions, convert_et_plus
from chakra.errors import ChakraError
from chakra.ingest import load_device_trace, load_host_trace
from chakra.link import LinkOptions, as_et_plus, link_traces
from chakra.simulate import NetworkModel, ScaleRule, SimGraph, build_graph, simulate, what_if
from chakra.simulate.analysis import critical_chain

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DIRS = [Path("/work/recordings"), REPO / "tests/data/pytorch213/gloo_net"]
FOLDER = re.compile(r"gloo(\d+)_(fast|slow)_r(\d+)$")
BANDWIDTH_RATIO = 1000 / 200  # 1gbit / 200mbit
RING_FAST, RING_SLOW = "ring:0.125:20", "ring:0.025:20"  # GB/s, µs per step
MIN_GAP_US = 50.0


# --------------------------------------------------------------------------- Kineto, raw


def intervals_union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def overlap_us(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Total overlap of two sorted, disjoint interval lists."""
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        total += max(0.0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


class KinetoFacts:
    """What the benchmark measures in one raw Kineto trace (µs)."""

    def __init__(self, path: Path) -> None:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            events = json.load(f)["traceEvents"]
        ops = [
            e
            for e in events
            if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")
        ]
        steps = sorted(
            (e for e in ops if e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"]
        )
        main = steps[0]["tid"]
        self.step_us = [float(e["dur"]) for e in steps]
        gloo = [e for e in ops if e["name"].startswith("gloo:") and e["tid"] != main]
        self.gloo_us = sum(float(e["dur"]) for e in gloo)
        self.gloo_on_main = sum(
            1 for e in ops if e["name"].startswith("gloo:") and e["tid"] == main
        )
        window = intervals_union([(e["ts"], e["ts"] + e["dur"]) for e in steps])
        busy = intervals_union(
            [
                (e["ts"], e["ts"] + e["dur"])
                for e in ops
                if e["tid"] == main and e["cat"] == "cpu_op"
            ]
        )
        gaps = [(a[1], b[0]) for a, b in zip(busy, busy[1:])]
        gaps = [(max(s, window[0][0]), min(e, window[-1][1])) for s, e in gaps if e > s]
        comm = intervals_union([(e["ts"], e["ts"] + e["dur"]) for e in gloo])
        self.wait_all_us = overlap_us(intervals_union(gaps), comm)
        long_gaps = [g for g in gaps if g[1] - g[0] >= MIN_GAP_US]
        self.wait_us = overlap_us(intervals_union(long_gaps), comm)
        self.long_gaps = intervals_union(long_gaps)
        #: (start, end, name) of each gloo op, by start: the k-th is the same collective on
        #: every rank (checked by name)
        self.gloo_spans = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in gloo)
        self.net_wait_us = self.wait_us  # until net_waits() knows the peers


def net_waits(facts: list[KinetoFacts]) -> None:
    """Each rank's wait on the transfers alone (``net_wait_us``): its long gaps overlapping
    its gloo ops from the last member's start of each on, not the time a rank waited for a
    peer that had not arrived yet (that peer was busy: a free network does not remove it).
    The k-th gloo op by start is the same collective on every rank; left as the plain wait
    where the names disagree."""
    counts = {len(f.gloo_spans) for f in facts}
    if len(counts) != 1:
        return
    for k in range(counts.pop()):
        if len({f.gloo_spans[k][2] for f in facts}) != 1:
            return
    lasts = [max(f.gloo_spans[k][0] for f in facts) for k in range(len(facts[0].gloo_spans))]
    for f in facts:
        windows = [(max(last, start), end) for (start, end, _), last in zip(f.gloo_spans, lasts)]
        f.net_wait_us = overlap_us(
            f.long_gaps, intervals_union([w for w in windows if w[1] > w[0]])
        )


# --------------------------------------------------------------------------- the library


class Rank:
    """One rank of a recording: its link report line, its graph (None if it failed)."""

    def __init__(self, folder: Path, rank: int) -> None:
        self.kineto = KinetoFacts(folder / f"rank{rank}.kineto.json.gz")
        self.graph: Optional[SimGraph] = None
        self.link = ""
        try:
            linked = link_traces(
                load_host_trace(folder / f"rank{rank}.host_et.json.gz"),
                load_device_trace(folder / f"rank{rank}.kineto.json.gz"),
                LinkOptions(),
            )
            rep = linked.report
            matched = sum(rep.matched.values())
            self.link = (
                f"matched {matched}/{rep.host_ops} ({rep.host_coverage:.1%}), unmatched "
                f"{rep.unmatched_host_ops}, rejected {sum(rep.rejected.values())}, "
                f"on other threads {rep.host_ops_on_other_threads}, "
                f"contradictions {rep.contradiction_count}"
            )
            self.graph = build_graph(
                convert_et_plus(as_et_plus(linked), ConvertOptions()).nodes, rank
            )
        except ChakraError as exc:
            self.link = self.link or f"link failed: {one_line(exc)}"
            self.link += f"; convert failed: {one_line(exc)}" if self.link else ""


def placement(graph: SimGraph) -> str:
    """Which collectives (by index in their group) the graph runs on a thread and which
    beside any thread (no resource)."""
    on, beside = [], []
    for node, key in sorted(graph.comm.items(), key=lambda item: item[1].index):
        name = graph.names[node].replace("gloo:", "")
        (beside if graph.resource[node] < 0 else on).append(f"#{key.index} {name}")
    return f"on a thread [{', '.join(on)}]; beside [{', '.join(beside)}]"


def one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def makespans(graphs: list[SimGraph], rules: list[str], network: str = "") -> list[float]:
    model = NetworkModel.parse(network) if network else None
    return what_if(graphs, [ScaleRule.parse(r) for r in rules], model).makespans()


class Replay:
    """All ranks simulated together, or, when that fails, each rank alone."""

    def __init__(self, ranks: list[Rank]) -> None:
        self.graphs = [r.graph for r in ranks if r.graph is not None]
        self.error = "" if len(self.graphs) == len(ranks) else "a rank failed to link/convert"
        self.together = False
        if not self.error:
            try:
                self.results = list(simulate(self.graphs).ranks)
                self.together = True
            except ChakraError as exc:
                self.error = one_line(exc)
        if not self.together:
            self.results = [simulate([g]).ranks[0] for g in self.graphs]

    @property
    def mode(self) -> str:
        return "together" if self.together else "alone"

    def peer_waits_free_network(self) -> list[float]:
        """Per rank, the time its critical chain spends inside collectives when every
        collective is free (``comm=0``): all of it waiting for a peer that arrives later
        (its own compute), which no network removes."""
        free = [ScaleRule.parse("comm=0")]
        if self.together:
            together = what_if(self.graphs, free)
            runs = [(together, r) for r in range(len(self.graphs))]
        else:
            runs = [(what_if([g], free), 0) for g in self.graphs]
        out = []
        for result, rank in runs:
            graph, start, end = result.graphs[rank], result.start[rank], result.end[rank]
            out.append(
                sum(end[n] - start[n] for n in critical_chain(result, rank) if n in graph.comm)
            )
        return out

    def run(self, rules: list[str], network: str = "") -> list[float]:
        """Makespan per rank of a what-if, run the way the replay ran."""
        if self.together:
            return makespans(self.graphs, rules, network)
        return [makespans([g], rules, network)[0] for g in self.graphs]


# --------------------------------------------------------------------------- the report


def report_recording(folder: Path) -> dict[str, Any]:
    ranks = []
    for path in sorted(folder.glob("rank*.kineto.json.gz")):
        ranks.append(Rank(folder, int(path.name[4:].split(".")[0])))
    net_waits([r.kineto for r in ranks])
    replay = Replay(ranks)
    print(f"\n== {folder.name}: {len(ranks)} ranks; simulated {replay.mode}")
    if replay.error:
        print(f"   ranks together: {replay.error}")
    for rank, r in enumerate(ranks):
        print(f"   rank {rank} link: {r.link}")
    for rank, r in enumerate(ranks):
        if r.graph is not None:
            print(f"   rank {rank} collectives: {placement(r.graph)}")
    comm0 = safe(lambda: replay.run(["comm=0"]))
    peer0 = safe(replay.peer_waits_free_network)
    print(
        f"   {'rank':>4} {'step ms':>8} {'measured ms':>11} {'simulated ms':>12} {'error %':>8} "
        f"{'comm=0 -ms':>10} {'wait ms':>8} {'net wait':>8} {'all gaps':>8} {'gloo ms':>8} "
        f"{'peer@0':>8}"
    )

    def peer_wait(rank: int) -> str:
        return f"{peer0[rank] / 1e3:8.2f}" if isinstance(peer0, list) and peer0 else ""

    for rank, (r, res) in enumerate(zip(ranks, replay.results)):
        k = r.kineto
        saved = (
            f"{(res.simulated_makespan_us - comm0[rank]) / 1e3:10.2f}" if comm0 else f"{'-':>10}"
        )
        measured = res.measured_makespan_us or float("nan")
        error = res.error_pct if res.error_pct is not None else float("nan")
        print(
            f"   {rank:>4} {statistics.mean(k.step_us) / 1e3:8.2f} {measured / 1e3:11.2f} "
            f"{res.simulated_makespan_us / 1e3:12.2f} {error:8.2f} {saved} "
            f"{k.wait_us / 1e3:8.2f} {k.net_wait_us / 1e3:8.2f} {k.wait_all_us / 1e3:8.2f} "
            f"{k.gloo_us / 1e3:8.2f} {peer_wait(rank)}"
        )
    if isinstance(comm0, str):
        print(f"   comm=0: {comm0}")
    return {"replay": replay, "ranks": ranks}


def safe(fn: Any) -> Any:
    try:
        return fn()
    except ChakraError as exc:
        return one_line(exc)


def step_ms(recording: dict[str, Any]) -> float:
    return statistics.mean(statistics.mean(r.kineto.step_us) for r in recording["ranks"]) / 1e3


def gloo_ms(recording: dict[str, Any]) -> float:
    return statistics.mean(r.kineto.gloo_us for r in recording["ranks"]) / 1e3


def predict_slow(world: int, fast: list[dict], slow: list[dict]) -> None:
    true = statistics.median(map(step_ms, slow)) / statistics.median(map(step_ms, fast)) - 1
    f_gloo = statistics.median(map(gloo_ms, slow)) / statistics.median(map(gloo_ms, fast))
    print(f"\n== {world} ranks: slow from fast ({len(fast)} fast, {len(slow)} slow repeats)")
    print(
        f"   step ms: fast {[round(step_ms(r), 2) for r in fast]}, "
        f"slow {[round(step_ms(r), 2) for r in slow]}; true change {true:+.1%}"
    )
    print(
        f"   gloo ms per rank: fast {[round(gloo_ms(r), 2) for r in fast]}, "
        f"slow {[round(gloo_ms(r), 2) for r in slow]}; F = {f_gloo:.2f}"
    )
    variants = [
        (f"comm={f_gloo:.2f} (gloo ratio)", [f"comm={f_gloo:.4f}"], ""),
        (f"comm={BANDWIDTH_RATIO:g} (bandwidth ratio)", [f"comm={BANDWIDTH_RATIO}"], ""),
        (f"{RING_SLOW} vs {RING_FAST}", [], RING_SLOW),
    ]
    for label, rules, network in variants:
        per_rank: dict[int, list[float]] = defaultdict(list)
        notes = set()
        for rec in fast:
            replay: Replay = rec["replay"]
            notes.add(replay.mode)
            if network and not replay.together:
                notes.add("not run: a rank alone meets only itself, which a model times 0")
                continue
            base = (
                replay.run([], RING_FAST)
                if network
                else [r.simulated_makespan_us for r in replay.results]
            )
            got = safe(
                lambda rules=rules, network=network, replay=replay: replay.run(rules, network)
            )
            if isinstance(got, str):
                notes.add(got)
                continue
            for rank, (b, g) in enumerate(zip(base, got)):
                per_rank[rank].append(g / b - 1)
        changes = [statistics.median(v) for _, v in sorted(per_rank.items())]
        text = ", ".join(f"{c:+.1%}" for c in changes) or "-"
        err = f"; error vs true {statistics.median(changes) - true:+.1%} points" if changes else ""
        print(f"   {label:<34} predicted per rank {text}{err} [{', '.join(sorted(notes))}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recordings", type=Path, help="folder of gloo{N}_{speed}_r{k}/")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    root = args.recordings or next(
        d for d in DEFAULT_DIRS if d.is_dir() and any(FOLDER.match(p.name) for p in d.iterdir())
    )
    print(f"recordings: {root}")
    sets: dict[int, dict[str, list[dict]]] = defaultdict(lambda: {"fast": [], "slow": []})
    for folder in sorted(p for p in root.iterdir() if FOLDER.match(p.name)):
        m = FOLDER.match(folder.name)
        assert m is not None
        sets[int(m.group(1))][m.group(2)].append(report_recording(folder))
    for world, by_speed in sorted(sets.items()):
        if by_speed["fast"] and by_speed["slow"]:
            predict_slow(world, by_speed["fast"], by_speed["slow"])


if __name__ == "__main__":
    main()
