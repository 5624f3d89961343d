"""``chakra_sim``: replay Chakra ET graphs (one per rank) and report their makespans."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

import msgspec

from chakra.cli.runner import add_log_level_option, run_tool
from chakra.fileio import atomic_output
from chakra.simulate.result import rank_results
from chakra.simulate.run import chrome_trace, simulate_files


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chakra_sim",
        description="Simulate Chakra ET graphs (.et, .et.gz or ET+ JSON), one file per rank.",
    )
    parser.add_argument("paths", nargs="+", metavar="FILE", help="one graph per rank, in order")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--timeline", type=Path, help="write the schedule as a Chrome trace")
    parser.add_argument(
        "--serialize-gpu",
        action="store_true",
        help="run all GPU work of a device on one slot (as before stream ids)",
    )
    add_log_level_option(parser)
    return parser  # fmt: skip


def _simulate(args: argparse.Namespace) -> None:
    engine = simulate_files(args.paths, args.serialize_gpu)
    results = rank_results(engine)
    if args.timeline is not None:
        with atomic_output(args.timeline, text=True) as out:
            json.dump(chrome_trace(engine), out)
    if args.json:
        print(json.dumps({"ranks": msgspec.to_builtins(results)}))
        return
    for result, path in zip(results, args.paths):
        measured = result.measured_makespan_us
        line = f"rank {result.rank} ({path}): simulated {result.simulated_makespan_us:,.0f} us"
        if measured is not None:
            line += f", measured {measured:,.0f} us, error {result.error_pct:+.2f}%"
        print(line)
        for use in result.resources:
            print(f"  {use.resource:<24} busy {use.busy_us:>12,.0f} us  {use.utilisation:6.1%}")


def main(argv: Optional[Sequence[str]] = None) -> None:
    sys.exit(run_tool(build_parser(), _simulate, argv))


if __name__ == "__main__":
    main()
