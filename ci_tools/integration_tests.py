"""Integration test over a bundle of per-rank traces: link -> convert -> simulate every rank,
then check each rank's simulated time against the expected one.

Reference-compatible flags::

    python ci_tools/integration_tests.py --tgz_path bundle.tgz --num_ranks 2 \\
        --tolerance 0.05 --expected_times_ms 3.3 3.4
    python ci_tools/integration_tests.py --tgz_path bundle.tgz --num_ranks 2 \\
        --tolerance 0.01 --expected-from-measured

The archive is extracted beside itself into ``<tgz without .tgz>/``. Each rank ``r`` needs a
host trace and a Kineto trace, named as the reference does (``chakra_host_et_<r>.json``,
``kineto_<r>.json``) or as ``chakra_synth`` writes them (``rank<r>.host_et.json``,
``rank<r>.kineto.json``), optionally ``.gz``, anywhere inside the archive. Exit status 0 when
every rank is within the tolerance, 1 otherwise (with a table), 2 for usage errors.
"""

from __future__ import annotations

import argparse
import os
import sys
import tarfile
from pathlib import Path
from typing import Optional

from chakra.errors import ChakraError
from chakra.pipeline import RankFiles, run_pipeline

HOST_NAMES = ("chakra_host_et_{r}.json", "rank{r}.host_et.json")
DEVICE_NAMES = ("kineto_{r}.json", "rank{r}.kineto.json")


def find_trace(root: Path, patterns: tuple[str, ...], rank: int, what: str) -> Path:
    names = {p.format(r=rank) + suffix for p in patterns for suffix in ("", ".gz")}
    found = sorted(p for p in root.rglob("*") if p.name in names)
    if not found:
        shown = " or ".join(sorted(names))
        raise ChakraError(f"rank {rank}: no {what} in {root} (looked for {shown})")
    return found[0]


def extract(tgz: Path) -> Path:
    if not tgz.is_file():
        raise ChakraError(f"{tgz}: no such archive")
    target = tgz.with_suffix("") if tgz.suffix == ".tgz" else tgz.parent / (tgz.name + ".d")
    target.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(tgz, "r:gz") as archive:
            try:  # refuse links and paths outside the folder where Python can
                archive.extractall(target, filter="data")
            except TypeError:  # Python without extraction filters
                archive.extractall(target)
    except (tarfile.TarError, OSError) as exc:
        raise ChakraError(f"{tgz}: cannot extract ({exc})") from exc
    return target


def check(
    args: argparse.Namespace,
) -> tuple[list[tuple[int, float, Optional[float], bool]], Path]:
    root = extract(Path(args.tgz_path))
    ranks = [RankFiles(r, find_trace(root, HOST_NAMES, r, "host trace"),
                       find_trace(root, DEVICE_NAMES, r, "Kineto trace"))
             for r in range(args.num_ranks)]  # fmt: skip
    jobs = max(1, min(args.num_ranks, os.cpu_count() or 1))
    result = run_pipeline(ranks, root / "chakra_pipeline_out", jobs=jobs, plot=False)
    rows = []
    for entry in result.ranks:
        simulated_ms = entry["simulation"]["simulated_makespan_us"] / 1000
        if args.expected_from_measured:
            measured = entry["simulation"]["measured_makespan_us"]
            expected = None if measured is None else measured / 1000
        else:
            expected = args.expected_times_ms[entry["rank"]]
        ok = expected is not None and abs(simulated_ms - expected) <= args.tolerance * expected
        rows.append((entry["rank"], simulated_ms, expected, ok))
    return rows, result.output_dir


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tgz_path", required=True)
    parser.add_argument("--num_ranks", type=int, required=True)
    parser.add_argument("--tolerance", type=float, required=True, help="relative, e.g. 0.05")
    parser.add_argument("--expected_times_ms", type=float, nargs="+")
    parser.add_argument("--expected-from-measured", action="store_true",
                        help="compare with each rank's measured time instead")  # fmt: skip
    args = parser.parse_args(argv)
    if not args.expected_from_measured and (
        not args.expected_times_ms or len(args.expected_times_ms) != args.num_ranks
    ):
        parser.error("give one --expected_times_ms per rank, or --expected-from-measured")
    try:
        rows, output = check(args)
    except ChakraError as exc:
        print(f"integration_tests: error: {exc}", file=sys.stderr)
        return 1
    print(f"{'rank':>4} {'simulated ms':>13} {'expected ms':>12}  result")
    for rank, simulated, expected, ok in rows:
        shown = f"{expected:12.3f}" if expected is not None else f"{'-':>12}"
        print(f"{rank:>4} {simulated:13.3f} {shown}  {'ok' if ok else 'MISMATCH'}")
    failed = [row for row in rows if not row[3]]
    print(f"{len(rows) - len(failed)} passed, {len(failed)} failed (tolerance "
          f"{args.tolerance:.1%}; outputs in {output})")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
