"""How well the simulator predicts a what-if, against ground truth it did not write.

For each job (seed, ops per step, ranks, steps, and the vintages and hazards of its traces;
with a data-loader thread and a gloo-like all_reduce on a worker thread unless
--no-worker-threads), the synthetic generator records the same program at speed 1 and again
with one resource faster or slower (GPU kernels, CPU, network). The speed-1 recording is
linked, converted and simulated with the matching ``--scale`` rules; the prediction is
compared with the makespan of the recording made at that speed. Prints one row per (job,
what-if): true change, predicted change, error (``!`` past --tolerance), then a summary line
and each rank's model-only error and unexplained time. A job the pipeline fails on prints
one line with the error instead of its rows.

    python benchmarks/what_if_accuracy.py [--jobs 1:200:2 2:600:3 3:1000:4] [--json OUT]
    python benchmarks/what_if_accuracy.py --matrix      # steps 1-3, 2-8 ranks, every variant
    python benchmarks/what_if_accuracy.py --matrix --kineto-only  # also from Kineto alone

A job is ``SEED:OPS_PER_STEP:RANKS[:STEPS[:VARIANT[+VARIANT...]]]``; variants are the
``chakra_synth`` vintages and the gloo hazards (see :data:`HAZARDS`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import tempfile
import time
from pathlib import Path

from chakra.simulate import ScaleRule, SimResult, build_graph, simulate, what_if
from chakra.synth import VINTAGES, SynthOptions, generate_job, options_with_vintages

#: (label, synthetic option, factor, scale rules that say the same to the simulator).
#: GPU kernels: the GPU ops that do not communicate (a collective's time is the network's); CPU:
#: the host ops that do not communicate (gloo collectives are the network's) and idle time.
WHAT_IFS = [
    ("GPU x0.5", "gpu_factor", 0.5, ["compute@class:gpu=0.5"]),
    ("GPU x0.25", "gpu_factor", 0.25, ["compute@class:gpu=0.25"]),
    ("GPU x2", "gpu_factor", 2.0, ["compute@class:gpu=2"]),
    ("CPU x0.5", "cpu_factor", 0.5, ["compute@class:cpu=0.5", "idle=0.5"]),
    ("CPU x2", "cpu_factor", 2.0, ["compute@class:cpu=2", "idle=2"]),
    ("network x0.5", "network_factor", 0.5, ["comm=0.5"]),
    ("network x2", "network_factor", 2.0, ["comm=2"]),
]
#: Hazard variants besides the vintages: the SynthOptions fields each switches on.
#: ``unrecorded_gloo_worker``: rank 0 only (one rank's gloo collectives carry no thread).
HAZARDS = {
    "blocking_gloo": {"blocking_gloo": True},
    "unrecorded_gloo_worker": {"unrecorded_gloo_ranks": (0,)},
    "stale_host_parents": {"stale_host_parents": True},
}
#: Shorthand for every hazard at once, with the ``no_cuda_sync`` vintage.
ALL_HAZARDS = ("no_cuda_sync", *HAZARDS)
#: --matrix: every vintage and hazard alone, and all hazards together, each at three shapes
#: (steps, ranks) with 200 ops per step: a few minutes on 2 cores. (At 60 ops per step the
#: fixed launch latencies weigh so much that CPU rows of the plain modern job are off by up
#: to 3.4%: the matrix is about the hazards, not the tiniest jobs; --matrix-ops 60 shows it.)
MATRIX_VARIANTS = [*VINTAGES, *HAZARDS, "all_hazards"]
MATRIX_SHAPES = [(1, 2), (2, 5), (3, 8)]
MATRIX_OPS = 200


@dataclasses.dataclass(frozen=True)
class Job:
    """One synthetic job of the benchmark."""

    seed: int
    ops: int
    ranks: int
    steps: int = 1
    variants: tuple[str, ...] = ("modern",)

    @classmethod
    def parse(cls, text: str) -> Job:
        fields = text.split(":")
        numbers = [int(x) for x in fields[:4]]
        variants = tuple(fields[4].split("+")) if len(fields) > 4 else ("modern",)
        return cls(*numbers, variants=variants)  # type: ignore[arg-type]

    @property
    def label(self) -> str:
        steps = f"{self.steps} step{'s' if self.steps > 1 else ''}"
        return f"seed {self.seed}, {self.ops} ops/step, {self.ranks} ranks, {steps}, " + "+".join(
            self.variants
        )

    def options(self, workers: bool) -> SynthOptions:
        base = SynthOptions(seed=self.seed, ranks=self.ranks, steps=self.steps,
                            ops_per_step=self.ops, worker_threads=workers)  # fmt: skip
        names = [n for v in self.variants for n in (ALL_HAZARDS if v == "all_hazards" else (v,))]
        changes: dict = {}
        for name in names:
            if name in HAZARDS:
                changes.update(HAZARDS[name])
            elif name not in VINTAGES:
                known = ", ".join([*VINTAGES, *HAZARDS, "all_hazards"])
                raise SystemExit(f"unknown variant {name!r}; known: {known}")
        vintages = [name for name in names if name in VINTAGES]
        return options_with_vintages(dataclasses.replace(base, **changes), vintages)


def matrix_jobs(ops: int = MATRIX_OPS) -> list[Job]:
    """The --matrix jobs: seed i for the i-th job, so every job draws differently."""
    jobs = []
    for variant in MATRIX_VARIANTS:
        for steps, ranks in MATRIX_SHAPES:
            jobs.append(Job(len(jobs) + 1, ops, ranks, steps, tuple(variant.split("+"))))
    return jobs


def rank_makespans_us(folder: Path, ranks: int) -> list[float]:
    """Each rank's true makespan: its latest end minus its earliest start (truth files)."""
    spans = []
    for rank in range(ranks):
        truth = json.loads((folder / f"rank{rank}.truth.json").read_text())
        ops = [*truth["host_ops"], *truth["gpu_ops"]]
        spans.append(max(o["ts_us"] + o["dur_us"] for o in ops) - min(o["ts_us"] for o in ops))
    return spans


def job_makespan_us(folder: Path, ranks: int) -> float:
    """The true makespan: from the truth files, the latest end minus the earliest start
    over every host and GPU op of every rank."""
    first, last = float("inf"), float("-inf")
    for rank in range(ranks):
        truth = json.loads((folder / f"rank{rank}.truth.json").read_text())
        for op in [*truth["host_ops"], *truth["gpu_ops"]]:
            first = min(first, op["ts_us"])
            last = max(last, op["ts_us"] + op["dur_us"])
    return last - first


def converted_graphs(folder: Path, ranks: int, work: Path, kineto_only: bool = False) -> list:
    """Link and convert every rank of the speed-1 recording (in memory), with what the
    ranks' agreement fills (chakra_pipeline rewrites the files so, chakra_sim reads them
    so: e.g. 1.0.1 sub-groups of one name told apart). ``kineto_only``: from the Kineto
    traces alone (the host side made from them, every step), as ``chakra_pipeline
    --profiler-step all`` does without host traces."""
    from chakra.convert import ConvertOptions, convert_et_plus
    from chakra.convert.et_plus_input import load_et_plus
    from chakra.ingest import load_device_trace, load_host_trace
    from chakra.ingest.kineto_host import host_trace_from_kineto
    from chakra.link import LinkOptions, link_traces
    from chakra.link.et_plus import write_et_plus
    from chakra.ranks import agree, patched
    from chakra.ranks.files import record_of

    graphs = []
    for rank in range(ranks):
        device = load_device_trace(folder / f"rank{rank}.kineto.json")
        host = (host_trace_from_kineto(device) if kineto_only
                else load_host_trace(folder / f"rank{rank}.host_et.json"))  # fmt: skip
        linked = link_traces(host, device, LinkOptions())
        et_plus = work / f"rank{rank}.{'kineto.' if kineto_only else ''}et_plus.json"
        write_et_plus(linked, et_plus)
        graphs.append(convert_et_plus(load_et_plus(et_plus), ConvertOptions()).nodes)
    agreement = agree([[r for r in map(record_of, nodes) if r is not None] for nodes in graphs])
    return [
        list(patched(nodes, agreement.fills[rank])) if agreement.fills.get(rank) else nodes
        for rank, nodes in enumerate(graphs)
    ]


def job_span_us(result: SimResult) -> float:
    """A run's makespan over all its ranks: the latest end minus the earliest start."""
    return max(max(end) for end in result.end) - min(min(start) for start in result.start)


def predicted_makespan_us(nodes: list, rules: list[str]) -> float:
    return predicted_makespans_us(nodes, rules)[0]


def predicted_makespans_us(nodes: list, rules: list[str]) -> tuple[float, list[float]]:
    """The what-if's job makespan and each rank's."""
    graphs = [build_graph(rank_nodes, rank) for rank, rank_nodes in enumerate(nodes)]
    result = what_if(graphs, [ScaleRule.parse(rule) for rule in rules])
    return job_span_us(result), result.makespans()


def run_job(
    job: Job, workers: bool, folder: Path, kineto_only: bool = False
) -> tuple[list[dict], dict]:
    """One job's what-if rows and its ranks' model-only error and unexplained time; with
    ``kineto_only``, each row and the model-only entry also hold the prediction from the
    Kineto traces alone (``kineto_*`` keys)."""
    base = job.options(workers)
    recorded = folder / "recorded"
    generate_job(base, recorded)
    work = folder / "work"
    work.mkdir()
    truth = _Truth.of(recorded, job.ranks)
    paths = {"": converted_graphs(recorded, job.ranks, work)}
    replays = {"": simulate([build_graph(n, r) for r, n in enumerate(paths[""])])}
    kineto_failed = None
    if kineto_only:
        try:  # the ET+ rows stand even where the Kineto traces alone cannot make a job
            paths["kineto_"] = converted_graphs(recorded, job.ranks, work, kineto_only=True)
            replays["kineto_"] = simulate([build_graph(n, r) for r, n in
                                           enumerate(paths["kineto_"])])  # fmt: skip
        except Exception as exc:  # a benchmark reports the failure and goes on
            kineto_failed = f"{type(exc).__name__}: {exc}"
            paths.pop("kineto_", None)
    model_only = {
        "job": job.label,
        "model_only_error_pct": [r.model_only_error_pct for r in replays[""].ranks],
        "unexplained_us": [r.unexplained_us for r in replays[""].ranks],
    }
    if kineto_failed is not None:
        model_only["kineto_failed"] = kineto_failed
    elif kineto_only:
        replayed = job_span_us(replays["kineto_"])
        model_only["kineto_replay_error_pct"] = (replayed - truth.job_us) / truth.job_us * 100
    rows = []
    for label, option, factor, rules in WHAT_IFS:
        truth_dir = folder / f"{option}_{factor}"
        generate_job(dataclasses.replace(base, **{option: factor}), truth_dir)
        scaled = _Truth.of(truth_dir, job.ranks)
        row = {"job": job.label, "what_if": label, "rules": " ".join(rules),
               "true_change_pct": (scaled.job_us - truth.job_us) / truth.job_us * 100}  # fmt: skip
        for key, nodes in paths.items():
            row.update(_prediction(key, nodes, rules, replays[key], truth, scaled))
        rows.append(row)
    return rows, model_only


@dataclasses.dataclass(frozen=True)
class _Truth:
    """A recording's true makespan, the job's and each rank's."""

    job_us: float
    ranks_us: list[float]

    @classmethod
    def of(cls, folder: Path, ranks: int) -> _Truth:
        return cls(job_makespan_us(folder, ranks), rank_makespans_us(folder, ranks))


def _prediction(
    key: str, nodes: list, rules: list[str], replay: SimResult, base: _Truth, scaled: _Truth
) -> dict:
    """A what-if's predicted change and its error against the truth (job and worst rank),
    under ``key``-prefixed names."""
    predicted, predicted_ranks = predicted_makespans_us(nodes, rules)
    replayed, replayed_ranks = job_span_us(replay), replay.makespans()
    per_rank = [
        (p / r * b - t) / t * 100
        for p, r, b, t in zip(predicted_ranks, replayed_ranks, base.ranks_us, scaled.ranks_us)
    ]
    return {
        f"{key}predicted_change_pct": (predicted - replayed) / replayed * 100,
        f"{key}error_pct": (predicted / replayed * base.job_us / scaled.job_us - 1) * 100,
        f"{key}rank_error_pct": max(per_rank, key=abs),
    }


def run(
    jobs: list[Job], workers: bool, kineto_only: bool = False
) -> tuple[list[dict], list[dict], list[dict]]:
    """The what-if rows, per job each rank's model-only error and unexplained time, and the
    jobs the pipeline failed on (``job``, ``error``). ``workers``: the programs have a
    data-loader thread and a gloo-like all_reduce on a worker thread."""
    rows: list[dict] = []
    model_only: list[dict] = []
    failed: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for index, job in enumerate(jobs):
            folder = Path(tmp) / f"job{index}"
            try:
                job_rows, job_model = run_job(job, workers, folder, kineto_only)
            except Exception as exc:  # a benchmark reports the failure and goes on
                failed.append({"job": job.label, "error": f"{type(exc).__name__}: {exc}"})
                continue
            rows.extend(job_rows)
            model_only.append(job_model)
    return rows, model_only, failed


def report(rows: list[dict], model_only: list[dict], failed: list[dict], tolerance: float):
    width = max([len(row["job"]) for row in rows] + [34])
    print(f"{'job':<{width}} {'what-if':<13} {'true %':>8} {'predicted %':>12} {'error %':>8}")
    for row in rows:
        flag = " !" if abs(row["error_pct"]) > tolerance else ""
        print(f"{row['job']:<{width}} {row['what_if']:<13} {row['true_change_pct']:>8.2f} "
              f"{row['predicted_change_pct']:>12.2f} {row['error_pct']:>8.2f}{flag}")  # fmt: skip
    for entry in failed:
        print(f"{entry['job']:<{width}} FAILED: {entry['error']}")
    errors = [abs(row["error_pct"]) for row in rows]
    if errors:
        print(f"|error|: max {max(errors):.2f}%, median {statistics.median(errors):.2f}% "
              f"over {len(errors)} rows")  # fmt: skip
        ranked = [abs(row["rank_error_pct"]) for row in rows]
        print(f"per rank (each rank's own makespan, the worst rank of each row): |error| max "
              f"{max(ranked):.2f}%, median {statistics.median(ranked):.2f}%")  # fmt: skip
    beyond = sum(1 for error in errors if error > tolerance)
    print(f"{beyond} of {len(errors)} rows beyond |error| {tolerance:g}% (marked !), "
          f"{len(failed)} job(s) failed")  # fmt: skip
    by_variant(rows, failed, tolerance)
    if any("kineto_replay_error_pct" in entry or "kineto_failed" in entry for entry in model_only):
        kineto_report(rows, model_only, tolerance)
    print("model-only error per rank (delay and idle nodes at zero), unexplained time:")
    for entry in model_only:
        errors_pct = ", ".join(f"{e:+.2f}%" for e in entry["model_only_error_pct"])
        unexplained = ", ".join(f"{u:,.0f}" for u in entry["unexplained_us"])
        print(f"  {entry['job']:<{width}} {errors_pct}  ({unexplained} us)")


def kineto_report(rows: list[dict], model_only: list[dict], tolerance: float) -> None:
    """--kineto-only: each row from the Kineto traces alone beside the ET+ path's, then
    the summary (replay against the truth, what-if errors, distance to the ET+ path)."""
    failed = [entry for entry in model_only if "kineto_failed" in entry]
    rows = [row for row in rows if "kineto_error_pct" in row]
    width = max([len(row["job"]) for row in rows] + [34])
    print("from the Kineto traces alone (no host ET), beside the host ET + Kineto path:")
    print(f"{'job':<{width}} {'what-if':<13} {'true %':>8} {'Kineto %':>9} {'error %':>8} "
          f"{'ET+ error %':>12} {'points apart':>13}")  # fmt: skip
    for row in rows:
        apart = row["kineto_error_pct"] - row["error_pct"]
        flag = " !" if abs(row["kineto_error_pct"]) > tolerance or abs(apart) > 1 else ""
        print(f"{row['job']:<{width}} {row['what_if']:<13} {row['true_change_pct']:>8.2f} "
              f"{row['kineto_predicted_change_pct']:>9.2f} {row['kineto_error_pct']:>8.2f} "
              f"{row['error_pct']:>12.2f} {apart:>+13.2f}{flag}")  # fmt: skip
    for entry in failed:
        print(f"{entry['job']:<{width}} FAILED from Kineto alone: {entry['kineto_failed']}")
    if not rows:
        return
    errors = [abs(row["kineto_error_pct"]) for row in rows]
    apart = [abs(row["kineto_error_pct"] - row["error_pct"]) for row in rows]
    replay = [abs(e["kineto_replay_error_pct"]) for e in model_only if "kineto_failed" not in e]
    print(f"Kineto alone: replay |error| against the truth max {max(replay):.2f}% over "
          f"{len(replay)} jobs; what-if |error| max {max(errors):.2f}%, median "
          f"{statistics.median(errors):.2f}% over {len(errors)} rows; apart from the ET+ "
          f"path max {max(apart):.2f} points, median {statistics.median(apart):.2f}; "
          f"{len(failed)} job(s) failed from Kineto alone")  # fmt: skip


def by_variant(rows: list[dict], failed: list[dict], tolerance: float) -> None:
    """One line per variant (the job label's last part): rows, max and median |error|, rows
    past ``tolerance``, failed jobs."""
    groups: dict[str, list[float]] = {}
    for row in rows:
        groups.setdefault(row["job"].rsplit(", ", 1)[1], []).append(abs(row["error_pct"]))
    crashed: dict[str, int] = {}
    for entry in failed:
        variant = entry["job"].rsplit(", ", 1)[1]
        crashed[variant] = crashed.get(variant, 0) + 1
        groups.setdefault(variant, [])
    print(f"{'variant':<24} {'rows':>5} {'max |error| %':>14} {'median %':>9} {'past tol.':>9} "
          f"{'failed jobs':>11}")  # fmt: skip
    for variant, errors in groups.items():
        top = f"{max(errors):.2f}" if errors else "-"
        median = f"{statistics.median(errors):.2f}" if errors else "-"
        beyond = sum(1 for error in errors if error > tolerance)
        print(f"{variant:<24} {len(errors):>5} {top:>14} {median:>9} {beyond:>9} "
              f"{crashed.get(variant, 0):>11}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", nargs="+", type=Job.parse, default=None,
                        help="SEED:OPS_PER_STEP:RANKS[:STEPS[:VARIANT[+VARIANT]]] (default: "
                        "1:200:2 2:600:3 3:1000:4)")  # fmt: skip
    parser.add_argument("--matrix", action="store_true",
                        help="every vintage and hazard at steps 1-3 and 2-8 ranks (with "
                        "--jobs: those too)")  # fmt: skip
    parser.add_argument(
        "--matrix-ops",
        type=int,
        default=MATRIX_OPS,
        help=f"ops per step of the --matrix jobs (default {MATRIX_OPS})",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=3.0,
        help="|error| %% past which a row is marked ! (default: 3)",
    )
    parser.add_argument(
        "--kineto-only",
        action="store_true",
        help="also predict from the Kineto traces alone (no host ET), beside the ET+ path",
    )
    parser.add_argument("--json", type=Path, help="also save the rows as JSON")
    parser.add_argument(
        "--no-worker-threads",
        action="store_true",
        help="programs without the data-loader and gloo-like worker threads",
    )
    args = parser.parse_args()
    jobs = args.jobs or ([] if args.matrix else [Job.parse(t) for t in ("1:200:2", "2:600:3",
                                                                        "3:1000:4")])  # fmt: skip
    if args.matrix:
        jobs = [*jobs, *matrix_jobs(args.matrix_ops)]
    started = time.perf_counter()
    rows, model_only, failed = run(jobs, not args.no_worker_threads, args.kineto_only)
    report(rows, model_only, failed, args.tolerance)
    print(f"{len(jobs)} jobs in {time.perf_counter() - started:.0f} s")
    if args.json:
        document = {"what_ifs": rows, "model_only": model_only, "failed": failed}
        args.json.write_text(json.dumps(document, indent=2))


if __name__ == "__main__":
    main()
