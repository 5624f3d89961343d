"""The robustness table: mutated inputs of every format through the tools that read them.

    python benchmarks/fuzz_robustness.py [--examples 5000] [--formats host,et] [--seed 0]
        [--jobs 2] [--json PATH]

Runs the fuzz campaign of ``tests/fuzz`` (mutators, tools, verdicts: see
:mod:`tests.fuzz.harness`) with every tool run limited to ``HANG_S`` seconds, and prints
one row per format: cases run, and how many ended in each kind of failure:

* ``traceback``: a Python traceback (or an uncaught signal, a MemoryError);
* ``hang``: no answer within ``HANG_S`` seconds;
* ``next tool``: exit 0, but the output is invalid or the tool that reads it next refuses
  it (an ET+ through ``chakra_converter``, an ``.et`` through ``chakra_validate`` and
  ``chakra_sim``);
* ``partial``: a ``.partial`` file, or any output, left behind by a failed run (or a
  broken one by a run stopped by a signal);
* ``other``: every other broken promise (an error of several lines, a changed input, an
  error line that names no file or blames a dead worker, a stopped run's extra lines...).

One case in 10 is stopped by SIGINT or SIGTERM 0-1.5 s after the start of the tool's
console script (those run in a subprocess: the imports are part of the trial); a run of
the host and Kineto formats may be ``chakra_pipeline -j 2`` on a folder whose rank 0 is
the mutant.

``--jobs N`` runs N formats at a time (one process each). Exit status 1 when any failure
was seen. The seed of each format's draws is ``SEED:format``, so a run is repeatable.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the fuzz suite lives in tests/

from tests.fuzz.campaign import Tally, run_format  # noqa: E402
from tests.fuzz.process import RunResult, fork_tool, preload  # noqa: E402
from tests.fuzz.targets import FORMATS, MODULES, build_seeds  # noqa: E402

HANG_S = 30.0
KINDS = ("traceback", "hang", "next tool", "partial", "other")
_KIND_OF = {
    "traceback": "traceback", "signal": "traceback", "memory": "traceback",
    "timeout": "hang",
    "invalid-output": "next tool", "missing-output": "next tool",
    "partial-left": "partial", "output-on-error": "partial", "output-on-interrupt": "partial",
}  # fmt: skip


def limited(module: str, argv, timeout_s: float, *, cwd: Optional[Path] = None) -> RunResult:
    """:func:`fork_tool` with at most ``HANG_S`` seconds per run."""
    return fork_tool(module, argv, min(timeout_s, HANG_S), cwd=cwd)


def fuzz_format(format_name: str, examples: int, seed: int) -> dict:
    """One format's row and its failure signatures (run in a worker process)."""
    folder = Path(tempfile.mkdtemp(prefix=f"chakra-fuzz-bench-{format_name}-"))
    logging.disable(logging.WARNING)  # the seeds' own warnings; the tools run in children
    try:
        seeds = build_seeds(folder)
        preload(MODULES)
        tally = Tally()
        rng = random.Random(f"{seed}:{format_name}")
        run_format(seeds, format_name, examples, rng, tally, runner=limited)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    cases, seconds = tally.throughput.get(format_name, (0, 0.0))
    row = dict.fromkeys(KINDS, 0)
    for signature, count in tally.counts.items():
        kind = signature.split(":")[1] if signature.count(":") >= 1 else "other"
        row[_KIND_OF.get(kind, "other")] += count
    signatures = {s: {"count": n, "example": tally.examples[s].reason[:300],
                      "mutation": tally.examples[s].mutation[:300]}
                  for s, n in tally.counts.most_common()}  # fmt: skip
    return {"format": format_name, "cases": cases, "seconds": round(seconds, 1), **row,
            "signatures": signatures}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=5000, help="mutants per format")
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="formats run at a time")
    parser.add_argument("--json", type=Path, help="write the rows and signatures here")
    args = parser.parse_args()
    formats = [f for f in args.formats.split(",") if f]
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        parser.error(f"unknown formats {unknown}; choose from {sorted(FORMATS)}")
    start = time.monotonic()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(fuzz_format, formats, [args.examples] * len(formats),
                             [args.seed] * len(formats)))  # fmt: skip
    print(f"{'format':>10} {'cases':>6} {'seconds':>8} " + " ".join(f"{k:>9}" for k in KINDS))
    for row in rows:
        print(f"{row['format']:>10} {row['cases']:>6} {row['seconds']:>8.0f} "
              + " ".join(f"{row[k]:>9}" for k in KINDS))  # fmt: skip
    for row in rows:
        for signature, found in row["signatures"].items():
            print(f"  {row['format']}: {found['count']} x {signature}: {found['example']}")
    print(f"total {sum(r['cases'] for r in rows)} cases in {time.monotonic() - start:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 1 if any(row[k] for row in rows for k in KINDS) else 0


if __name__ == "__main__":
    sys.exit(main())
