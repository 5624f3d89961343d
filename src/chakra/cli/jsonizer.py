"""``chakra_jsonizer``: render a Chakra ET (.et, plain or gzip) as JSON."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Optional

from chakra.cli.conventions import ToolArgumentParser, add_file_options
from chakra.cli.outputs import prepare_outputs
from chakra.cli.runner import add_log_level_option, run_tool

logger = logging.getLogger(__name__)
WANTS = "a Chakra ET (.et, chakra_converter's output)"


#: What the work imports, loaded once the arguments parse (:func:`~chakra.cli.runner.run_tool`).
LIBRARIES = (
    "chakra.et.jsonize",
    "chakra.ingest.detect",
)


def build_parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="chakra_jsonizer",
        description="Render a Chakra ET file as one JSON document (or JSON Lines).",
    )
    add_file_options(
        parser, "Chakra ET file (.et; gzip is recognised by content)", "JSON file to write"
    )
    parser.add_argument(
        "--jsonl",
        action="store_true",
        help="write one message per line: GlobalMetadata, then each node",
    )
    add_log_level_option(parser)
    return parser


def _jsonize(args: argparse.Namespace) -> None:
    from chakra.et.jsonize import jsonize_et  # after the arguments parse (a quick --help)
    from chakra.ingest.detect import TraceKind, require_kind

    require_kind(
        args.input,
        (TraceKind.CHAKRA_ET,),
        "chakra_jsonizer",
        "a Chakra ET (.et, chakra_converter's output)",
    )
    prepare_outputs([args.output], [args.input])
    count = jsonize_et(args.input, args.output, jsonl=args.jsonl)
    logger.info("wrote %d nodes to %s", count, args.output)


def main(argv: Optional[Sequence[str]] = None) -> None:
    sys.exit(run_tool(build_parser(), _jsonize, argv, LIBRARIES))


if __name__ == "__main__":
    main()
