"""``chakra_validate``: check Chakra ET files, and their collectives across ranks."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from chakra.cli.conventions import ToolArgumentParser
from chakra.cli.runner import add_log_level_option, each_input, run_tool
from chakra.errors import ChakraError, TraceFormatError, ValidationFailedError

logger = logging.getLogger(__name__)
WANTS = "a Chakra ET (.et, chakra_converter's output)"


def build_parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="chakra_validate",
        description=(
            "Validate Chakra ET files (ids, deps, cycles, feeder attributes); with several"
            " files, also check each process group's collectives match across ranks."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE.et", help="ET files (plain or gzip)")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument(
        "--require-streams",
        action="store_true",
        help="GPU nodes must carry a stream attribute",
    )
    parser.add_argument(
        "--comm-groups",
        type=Path,
        metavar="FILE",
        help="ASTRA-sim comm-group JSON: every pg_name must be one of its groups (default: "
        "PREFIX.comm_groups.json beside a PREFIX.<rank>.et family, when there is one)",
    )
    parser.add_argument(
        "--no-astra-sim",
        action="store_true",
        help="skip the checks of what the shipped ASTRA-sim cannot run (METADATA nodes, "
        "pg_name not a group id from 1, BARRIER and other unsupported collectives, "
        "send/recv without comm_src/comm_dst/comm_tag)",
    )
    add_log_level_option(parser)
    return parser


def _comm_groups(args: argparse.Namespace) -> Optional[frozenset[str]]:
    """The group ids of the comm-group file given or found beside the files (None: none)."""
    from chakra.convert.astra_sim import comm_groups_path
    from chakra.convert.group_file import read_comm_groups

    path = args.comm_groups
    if path is None:
        found = {comm_groups_path(Path(f)) for f in args.files}
        if len(found) != 1 or not next(iter(found)).is_file():
            return None
        path = next(iter(found))
        logger.info("checking group names against %s", path)
    table = read_comm_groups(Path(path))
    if table is None:
        raise ChakraError(f"{path}: cannot read the comm-group file (no such file)")
    return frozenset(str(name) for name in table)


def _validate(args: argparse.Namespace) -> None:
    from chakra.et.graph_checks import ValidationOptions
    from chakra.ingest.detect import TraceKind, require_kind
    from chakra.tools.validate_files import (
        check_file,
        cross_rank,
        format_text,
        meeting_check,
        mismatches_of,
        to_json,
    )

    each_input(
        args.files,
        lambda path: require_kind(path, (TraceKind.CHAKRA_ET,), "chakra_validate", WANTS),
    )
    if len(args.files) > 1:  # rank = each file's own (metadata or name), not its position
        from chakra.simulate.rank_order import files_in_rank_order

        with contextlib.suppress(TraceFormatError):  # an unreadable file: its check says so
            args.files = files_in_rank_order(args.files)
    options = ValidationOptions(
        require_streams=args.require_streams,
        astra_sim=not args.no_astra_sim,
        comm_groups=_comm_groups(args),
    )
    results = [check_file(path, options) for path in args.files]
    agreement = cross_rank(results)
    mismatches = mismatches_of(agreement, results) if len(results) > 1 else []
    failed = sum(not r.ok for r in results)
    together = len(results) > 1 and not failed and not mismatches and agreement.compared
    never_meet = meeting_check(args.files) if together else None
    if args.json:
        document = to_json(results, mismatches, agreement)
        if together:
            document["meet"] = never_meet is None
            document["meet_error"] = never_meet
        print(json.dumps(document, indent=1))
    else:
        print("\n".join(format_text(results, mismatches, agreement=agreement)))
        if together:
            print("cross-rank: the ranks replay together: " + ("yes" if never_meet is None
                  else f"no, their collectives cannot all meet: {never_meet}"))  # fmt: skip
    if failed or mismatches or never_meet:
        parts = []
        if failed:
            parts.append(f"{failed} of {len(results)} files failed validation")
        if mismatches:
            parts.append(f"{len(mismatches)} process groups differ across ranks")
        if never_meet:
            parts.append(f"the {len(results)} files failed validation together: their "
                         "collectives cannot all meet (a replay deadlocks)")  # fmt: skip
        raise ValidationFailedError("; ".join(parts))


def main(argv: Optional[Sequence[str]] = None) -> None:
    sys.exit(run_tool(build_parser(), _validate, argv))


if __name__ == "__main__":
    main()
