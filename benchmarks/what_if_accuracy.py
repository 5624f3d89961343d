"""How well the simulator predicts a what-if, against ground truth it did not write.

For each job (seed, ops per step, ranks; with a data-loader thread and a gloo-like all_reduce
on a worker thread unless --no-worker-threads), the synthetic generator records the same program
at speed 1 and again with one resource faster or slower (GPU kernels, CPU, network). The
speed-1 recording is linked, converted and simulated with the matching ``--scale`` rules;
the prediction is compared with the makespan of the recording made at that speed. Prints
one row per (job, what-if): true change, predicted change, error.

    python benchmarks/what_if_accuracy.py [--jobs 1:200:2 2:600:3 3:1000:4] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from chakra.simulate import ScaleRule, SimResult, build_graph, simulate, what_if
from chakra.synth import SynthOptions, generate_job

#: (label, synthetic option, factor, scale rules that say the same to the simulator).
#: GPU kernels: every GPU op but the collectives (their time is the network's).
WHAT_IFS = [
    ("GPU x0.5", "gpu_factor", 0.5, ["gpu=0.5", "comm=2"]),
    ("GPU x0.25", "gpu_factor", 0.25, ["gpu=0.25", "comm=4"]),
    ("GPU x2", "gpu_factor", 2.0, ["gpu=2", "comm=0.5"]),
    ("CPU x0.5", "cpu_factor", 0.5, ["cpu=0.5", "idle=0.5"]),
    ("CPU x2", "cpu_factor", 2.0, ["cpu=2", "idle=2"]),
    ("network x0.5", "network_factor", 0.5, ["comm=0.5"]),
    ("network x2", "network_factor", 2.0, ["comm=2"]),
]


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


def converted_graphs(folder: Path, ranks: int, work: Path) -> list:
    """Link and convert every rank of the speed-1 recording (in memory)."""
    from chakra.convert import ConvertOptions, convert_et_plus
    from chakra.convert.et_plus_input import load_et_plus
    from chakra.ingest import load_device_trace, load_host_trace
    from chakra.link import LinkOptions, link_traces
    from chakra.link.et_plus import write_et_plus

    graphs = []
    for rank in range(ranks):
        linked = link_traces(load_host_trace(folder / f"rank{rank}.host_et.json"),
                             load_device_trace(folder / f"rank{rank}.kineto.json"),
                             LinkOptions())  # fmt: skip
        et_plus = work / f"rank{rank}.et_plus.json"
        write_et_plus(linked, et_plus)
        graphs.append(convert_et_plus(load_et_plus(et_plus), ConvertOptions()).nodes)
    return graphs


def job_span_us(result: SimResult) -> float:
    """A run's makespan over all its ranks: the latest end minus the earliest start."""
    return max(max(end) for end in result.end) - min(min(start) for start in result.start)


def predicted_makespan_us(nodes: list, rules: list[str]) -> float:
    graphs = [build_graph(rank_nodes, rank) for rank, rank_nodes in enumerate(nodes)]
    return job_span_us(what_if(graphs, [ScaleRule.parse(rule) for rule in rules]))


def run(jobs: list[tuple[int, int, int]], workers: bool) -> tuple[list[dict], list[dict]]:
    """The what-if rows, and per job each rank's model-only error and unexplained time.
    ``workers``: the programs have a data-loader thread and a gloo-like all_reduce on a
    worker thread (``chakra_synth --worker-threads``)."""
    rows: list[dict] = []
    model_only: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        base_dir = Path(tmp)
        for seed, ops, ranks in jobs:
            base = SynthOptions(
                seed=seed, ranks=ranks, steps=1, ops_per_step=ops, worker_threads=workers
            )
            recorded = base_dir / f"s{seed}"
            generate_job(base, recorded)
            work = base_dir / f"w{seed}"
            work.mkdir()
            nodes = converted_graphs(recorded, ranks, work)
            true_base = job_makespan_us(recorded, ranks)
            replay = simulate([build_graph(rank_nodes, r) for r, rank_nodes in enumerate(nodes)])
            replayed = job_span_us(replay)
            explained = replay.ranks
            model_only.append({
                "job": f"seed {seed}, {ops} ops/step, {ranks} ranks",
                "model_only_error_pct": [r.model_only_error_pct for r in explained],
                "unexplained_us": [r.unexplained_us for r in explained],
            })  # fmt: skip
            for label, option, factor, rules in WHAT_IFS:
                truth_dir = base_dir / f"s{seed}_{option}_{factor}"
                options = SynthOptions(**{**base.__dict__, option: factor})
                generate_job(options, truth_dir)
                true = job_makespan_us(truth_dir, ranks)
                predicted = predicted_makespan_us(nodes, rules)
                true_change = (true - true_base) / true_base * 100
                predicted_change = (predicted - replayed) / replayed * 100
                rows.append({
                    "job": f"seed {seed}, {ops} ops/step, {ranks} ranks", "what_if": label,
                    "rules": " ".join(rules), "true_change_pct": true_change,
                    "predicted_change_pct": predicted_change,
                    "error_pct": (predicted / replayed * true_base - true) / true * 100,
                })  # fmt: skip
    return rows, model_only


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", nargs="+", default=["1:200:2", "2:600:3", "3:1000:4"],
                        help="SEED:OPS_PER_STEP:RANKS")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also save the rows as JSON")
    parser.add_argument(
        "--no-worker-threads",
        action="store_true",
        help="programs without the data-loader and gloo-like worker threads",
    )
    args = parser.parse_args()
    jobs = [tuple(int(x) for x in text.split(":")) for text in args.jobs]
    rows, model_only = run(jobs, not args.no_worker_threads)  # type: ignore[arg-type]
    print(f"{'job':<34} {'what-if':<13} {'true %':>8} {'predicted %':>12} {'error %':>8}")
    for row in rows:
        print(f"{row['job']:<34} {row['what_if']:<13} {row['true_change_pct']:>8.2f} "
              f"{row['predicted_change_pct']:>12.2f} {row['error_pct']:>8.2f}")  # fmt: skip
    errors = [abs(row["error_pct"]) for row in rows]
    print(f"|error|: max {max(errors):.2f}%, median {statistics.median(errors):.2f}%")
    print("model-only error per rank (delay and idle nodes at zero), unexplained time:")
    for entry in model_only:
        errors_pct = ", ".join(f"{e:+.2f}%" for e in entry["model_only_error_pct"])
        unexplained = ", ".join(f"{u:,.0f}" for u in entry["unexplained_us"])
        print(f"  {entry['job']:<34} {errors_pct}  ({unexplained} us)")
    if args.json:
        args.json.write_text(json.dumps({"what_ifs": rows, "model_only": model_only}, indent=2))


if __name__ == "__main__":
    main()
