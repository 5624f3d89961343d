"""A long fuzzing run outside pytest, and the catalogue of what it found.

    PYTHONPATH=src python -m tests.fuzz.campaign --examples 5000 --report fuzz.json \\
        --save-dir fuzz-cases [--formats et,host] [--seed 7] [--runner subprocess]

Runs ``--examples`` mutants of every format (each through one of the tools that read it;
see :mod:`tests.fuzz.targets`), in forked children by default, and prints the throughput
per format and every failure signature with its count, whether :mod:`tests.fuzz.known`
lists it, and one reproducer. ``--report`` writes it all as JSON; ``--save-dir`` keeps the
first mutant of each signature (``<n>.<format><suffix>`` plus ``<n>.txt``: the command
line, the mutation and stderr). Exit status 1 when a signature not in the known list
appeared.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

from tests.fuzz.harness import fork_tool, preload, run_tool
from tests.fuzz.known import todo_for
from tests.fuzz.targets import FORMATS, MODULES, Finding, Seeds, build_seeds, fuzz_one


@dataclass
class Tally:
    """Findings of a run, by signature: counts, the first example, the formats that hit
    each, and the throughput per format."""

    counts: Counter = field(default_factory=Counter)
    examples: dict[str, Finding] = field(default_factory=dict)
    formats: dict[str, set[str]] = field(default_factory=dict)
    throughput: dict[str, tuple[int, float]] = field(default_factory=dict)

    def add(self, format_name: str, finding: Finding) -> bool:
        """Count ``finding``; True when its signature is new to this tally."""
        self.counts[finding.signature] += 1
        self.formats.setdefault(finding.signature, set()).add(format_name)
        if finding.signature in self.examples:
            return False
        self.examples[finding.signature] = finding
        return True

    def unknown(self) -> list[str]:
        return sorted(s for s in self.counts if todo_for(s) is None)

    def as_json(self) -> dict:
        return {
            "throughput": {f: {"cases": n, "seconds": round(s, 1),
                               "cases_per_second": round(n / s, 2) if s else None}
                           for f, (n, s) in self.throughput.items()},
            "signatures": [{"signature": s, "count": n, "formats": sorted(self.formats[s]),
                            "known": todo_for(s), **asdict(self.examples[s])}
                           for s, n in self.counts.most_common()],
        }  # fmt: skip


def run_format(
    seeds: Seeds,
    format_name: str,
    examples: int,
    rng: random.Random,
    tally: Tally,
    *,
    runner=fork_tool,
    save_dir: Optional[Path] = None,
    deadline: Optional[float] = None,
) -> None:
    """Fuzz ``format_name`` ``examples`` times (or until ``deadline``, a monotonic time)."""
    scratch = Path(tempfile.mkdtemp(prefix=f"chakra-fuzz-{format_name}-"))
    start, done = time.monotonic(), 0
    try:
        for _ in range(examples):
            if deadline is not None and time.monotonic() > deadline:
                break
            try:
                report = fuzz_one(seeds, format_name, rng, scratch / "case", runner)
            except Exception as exc:  # a bug of the fuzzer: count it, show it once, go on
                signature = f"harness:error:{type(exc).__name__}"
                if signature not in tally.counts:
                    traceback.print_exc()
                tally.add(format_name, Finding(signature, str(exc), "?", "?", ""))
                continue
            done += 1
            for finding in report.findings:
                if tally.add(format_name, finding) and save_dir is not None:
                    _save(save_dir, len(tally.examples), format_name, report.mutant, finding)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    spent = time.monotonic() - start
    old_n, old_s = tally.throughput.get(format_name, (0, 0.0))
    tally.throughput[format_name] = (old_n + done, old_s + spent)


def _save(folder: Path, number: int, format_name: str, mutant: Path, finding: Finding) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{number:03d}.{format_name}"
    shutil.copyfile(mutant, folder / f"{stem}{mutant.suffix}")
    (folder / f"{stem}.txt").write_text(
        f"signature: {finding.signature}\nreason: {finding.reason}\n"
        f"mutation: {finding.mutation}\ncommand: {finding.command}\n"
        f"(the mutant was {mutant}; here {stem}{mutant.suffix})\n\nstderr:\n{finding.stderr_tail}\n"
    )


def print_catalogue(tally: Tally, out=sys.stdout) -> None:
    for format_name, (cases, seconds) in tally.throughput.items():
        rate = cases / seconds if seconds else 0.0
        print(f"{format_name:>10}: {cases:6d} cases in {seconds:7.1f} s = {rate:5.1f}/s", file=out)
    print(f"\n{len(tally.counts)} failure signatures:", file=out)
    for signature, count in tally.counts.most_common():
        example = tally.examples[signature]
        mark = "known" if todo_for(signature) else "NEW"
        print(f"{count:6d} [{mark}] {signature}\n         {example.reason[:240]}\n"
              f"         mutant: {example.mutation[:240]}\n         {example.command[:240]}",
              file=out)  # fmt: skip


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="campaign", description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=5000, help="mutants per format")
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runner", choices=("fork", "subprocess"), default="fork")
    parser.add_argument("--time-limit", type=float, help="seconds for the whole run")
    parser.add_argument("--report", type=Path, help="write the findings as JSON")
    parser.add_argument("--save-dir", type=Path, help="keep one mutant per signature here")
    parser.add_argument("--seeds-dir", type=Path, help="where to build the seeds (default: tmp)")
    args = parser.parse_args(argv)
    formats = [f for f in args.formats.split(",") if f]
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        parser.error(f"unknown formats {unknown}; choose from {sorted(FORMATS)}")
    folder = args.seeds_dir or Path(tempfile.mkdtemp(prefix="chakra-fuzz-seeds-"))
    seeds = build_seeds(folder)
    runner = fork_tool if args.runner == "fork" else run_tool
    if runner is fork_tool:
        preload(MODULES)
    deadline = time.monotonic() + args.time_limit if args.time_limit else None
    tally = Tally()
    per_format = None if deadline is None else (deadline - time.monotonic()) / len(formats)
    for number, format_name in enumerate(formats):
        rng = random.Random(f"{args.seed}:{format_name}")
        until = None if per_format is None else time.monotonic() + per_format
        run_format(seeds, format_name, args.examples, rng, tally, runner=runner,
                   save_dir=args.save_dir, deadline=until)  # fmt: skip
        cases = tally.throughput[format_name][0]
        print(f"[{number + 1}/{len(formats)}] {format_name}: {cases} cases, "
              f"{len(tally.counts)} signatures so far", file=sys.stderr, flush=True)  # fmt: skip
        if args.report:  # after each format: a crash or a kill keeps what was found
            args.report.write_text(json.dumps(tally.as_json(), indent=1))
    print_catalogue(tally)
    return 1 if tally.unknown() else 0


if __name__ == "__main__":
    sys.exit(main())
