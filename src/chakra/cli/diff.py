"""``chakra_diff``: compare two runs, or a run and a what-if of it: which ops and kernels
changed their time (largest change first) and how each rank's makespan and critical path
changed."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from chakra.cli.conventions import ToolArgumentParser
from chakra.cli.runner import add_log_level_option, run_tool
from chakra.errors import ChakraError, UsageError

if TYPE_CHECKING:
    from chakra.simulate import ScaleRule
    from chakra.views.run_diff import RunDiff

RUN_HELP = ("a run: a chakra_pipeline output folder, a folder of PREFIX.<rank>.et files, or "
            "one .et or ET+ JSON file (one rank)")  # fmt: skip


#: What the work imports, loaded once the arguments parse (:func:`~chakra.cli.runner.run_tool`).
LIBRARIES = ("msgspec",)


def build_parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="chakra_diff",
        description="Compare run A with run B (or with a what-if of A, --scale): ops and "
        "kernels whose total simulated time changed, largest change first, and each rank's "
        "makespan and typed critical path (cpu, gpu, communication, launch), A -> B.",
    )
    parser.add_argument("a", metavar="A", help=RUN_HELP)
    parser.add_argument("b", metavar="B", nargs="?", help=RUN_HELP + "; leave out with --scale")
    parser.add_argument(
        "--scale",
        action="append",
        default=[],
        metavar="RULE",
        help="compare A with A replayed under these what-if rules (as chakra_sim --scale "
        "takes them, e.g. gpu=0.5); repeatable",
    )
    parser.add_argument(
        "--top", type=int, default=20, metavar="N", help="names to show (default 20)"
    )
    parser.add_argument("--json", action="store_true", help="print the diff as one JSON object")
    add_log_level_option(parser)
    return parser


def _rules(texts: Sequence[str]) -> list[ScaleRule]:
    from chakra.simulate import ScaleRule

    rules = []
    for text in texts:
        try:
            rules.append(ScaleRule.parse(text))
        except ChakraError as exc:
            raise UsageError(f"argument --scale: {str(exc).removeprefix('--scale ')}") from None
    return rules


def _diff(args: argparse.Namespace) -> None:
    if (args.b is None) == (not args.scale):
        raise UsageError("give run B, or --scale rules to compare A with a what-if of it")
    if args.top < 0:
        raise UsageError(f"argument --top: {args.top} is negative")
    rules = _rules(args.scale)
    from chakra.analysis.compare import compare_runs, compare_what_if

    found = compare_what_if(args.a, rules) if args.b is None else compare_runs(args.a, args.b)
    if args.json:
        import msgspec

        shown = msgspec.structs.replace(found, names=found.names[: args.top])
        print(json.dumps(msgspec.to_builtins(shown)))
        return
    print(_text(found, args.top))


def _text(found: RunDiff, top: int) -> str:
    lines = ["makespan and critical path by kind (µs), A -> B:"]
    for p in found.path:
        lines.append(
            f"  rank {p.rank:>3}  {p.kind:<13} {p.a_us:>12,.0f} -> {p.b_us:>12,.0f}  "
            f"{p.change_us:>+12,.0f}"
        )
    names = found.names
    lines.append(f"ops and kernels that changed ({min(top, len(names))} of {len(names)}):")
    lines.append("  rank  kind      change µs         A µs         B µs  count A/B  name")
    for c in names[:top]:
        lines.append(
            f"  {c.rank:>4}  {c.kind:<6} {c.change_us:>+12,.1f} {c.total_a_us:>12,.1f} "
            f"{c.total_b_us:>12,.1f}  {c.count_a:>4}/{c.count_b:<4}  {c.name}"
        )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> None:
    sys.exit(run_tool(build_parser(), _diff, argv, LIBRARIES))


if __name__ == "__main__":
    main()
