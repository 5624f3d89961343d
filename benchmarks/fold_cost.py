"""How the fold ASTRA-sim profile (chakra.simulate.fold) scales: for synthetic 2-rank jobs
of growing size, the seconds of folding every rank (given the joint replay) and of fitting
the ring bandwidth, per node of the full graphs; the fold should be linear in the nodes.

    python benchmarks/fold_cost.py [--sizes 500 2000 8000] [--ranks 2]
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

from chakra.et import read_et
from chakra.pipeline import RankFiles, run_pipeline
from chakra.simulate import build_graph, simulate
from chakra.simulate.astra_calibration import fitted_ring
from chakra.simulate.fold import fold_job
from chakra.synth import SynthOptions, generate_job


def measure(ops_per_step: int, ranks: int, folder: Path) -> dict:
    summary = generate_job(SynthOptions(seed=1, ranks=ranks, steps=1, ops_per_step=ops_per_step,
                                        worker_threads=True), folder / "traces")  # fmt: skip
    files = [RankFiles(r.rank, r.host_et, r.kineto) for r in summary.ranks]
    result = run_pipeline(files, folder / "out", plot=False, html=False, timeline=False,
                          what_if=[])  # fmt: skip
    nodes = [read_et(f"{result.et_prefix}.{r}.et")[1] for r in range(ranks)]
    replay = simulate([build_graph(n, r) for r, n in enumerate(nodes)])
    start = time.perf_counter()
    folded = fold_job(nodes, replay)
    folding = time.perf_counter() - start
    measured = [r.measured_makespan_us or 0.0 for r in replay.ranks]
    start = time.perf_counter()
    fitted_ring(folded, measured)
    fitting = time.perf_counter() - start
    total = sum(len(n) for n in nodes)
    return {"nodes": total, "folded": sum(len(f) for f in folded), "fold_s": folding,
            "fit_s": fitting, "fold_us_per_node": folding / total * 1e6}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000, 8000])
    parser.add_argument("--ranks", type=int, default=2)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    rows = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as folder:
            rows.append(measure(size, args.ranks, Path(folder)))
    print(f"{'nodes':>9} {'folded':>7} {'fold s':>7} {'fit s':>7} {'fold us/node':>13}")
    for r in rows:
        print(f"{r['nodes']:>9,} {r['folded']:>7,} {r['fold_s']:7.3f} {r['fit_s']:7.3f} "
              f"{r['fold_us_per_node']:13.2f}")  # fmt: skip
    growth = rows[-1]["fold_us_per_node"] / rows[0]["fold_us_per_node"]
    print(f"linearity: fold us per node, largest / smallest = {growth:.2f} (1.00 is linear)")


if __name__ == "__main__":
    main()
