"""``chakra_visualizer``: draw a Chakra ET's dependency graph (.dot, .graphml, .pdf/.svg/.png)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Optional

from chakra.cli import arg_types
from chakra.cli.outputs import prepare_outputs
from chakra.cli.runner import add_log_level_option, run_tool
from chakra.errors import ChakraError
from chakra.ingest.detect import TraceKind, require_kind
from chakra.tools.name_filter import MAX_REPEAT_COUNT, compile_filter
from chakra.tools.visualize import DEFAULT_MAX_NODES, parse_selection, visualize

logger = logging.getLogger(__name__)
WANTS = "a Chakra ET (.et, chakra_converter's output)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chakra_visualizer",
        description=(
            "Draw the data (solid) and control (dashed) dependencies of a Chakra ET. Nodes"
            " show their short name, type, thread or stream and duration, filled by resource"
            " (CPU threads blue, GPU streams a hue each, communication red; a legend in"
            " dot), with the whole name as tooltip (GraphML: the name attribute)."
            " .dot and .graphml need nothing else; .pdf, .svg and .png need Graphviz's dot."
        ),
    )
    parser.add_argument("--input_filename", required=True, help="Chakra ET file (.et)")
    parser.add_argument(
        "--output_filename",
        required=True,
        help="output; its extension (.dot, .graphml, .pdf, .svg, .png) picks the format",
    )
    parser.add_argument(
        "--max-nodes",
        "--max_nodes",
        dest="max_nodes",
        type=arg_types.positive_int,
        default=DEFAULT_MAX_NODES,
        help=f"refuse to draw more nodes than this (default: {DEFAULT_MAX_NODES})",
    )
    parser.add_argument(
        "--id-range",
        "--id_range",
        dest="id_range",
        metavar="A:B",
        help="draw only nodes with A <= id <= B (either end may be left out)",
    )
    parser.add_argument(
        "--name-filter",
        "--name_filter",
        dest="name_filter",
        metavar="REGEX",
        type=_name_filter,
        help="draw only nodes whose name matches REGEX (re.search); refused: repetition "
        f"counts above {MAX_REPEAT_COUNT:,} and the shapes that can take exponential time, a "
        "variable repetition or an alternation inside a variable repetition ((a+)+, "
        "(a|aa)*; a possessive ++ or atomic (?>...) group is fine)",
    )
    add_log_level_option(parser)
    return parser


def _name_filter(text: str) -> str:
    """argparse's type for --name-filter: one that cannot be compiled, or that could take
    exponential time, is a usage error (status 2) before any work."""
    try:
        compile_filter(text)
    except ChakraError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _visualize(args: argparse.Namespace) -> None:
    require_kind(
        args.input_filename,
        (TraceKind.CHAKRA_ET,),
        "chakra_visualizer",
        "a Chakra ET (.et, chakra_converter's output)",
    )
    prepare_outputs([args.output_filename], [args.input_filename])
    selection = parse_selection(args.id_range or None, args.name_filter)
    count = visualize(args.input_filename, args.output_filename, selection, args.max_nodes)
    logger.info("drew %d nodes into %s", count, args.output_filename)


def main(argv: Optional[Sequence[str]] = None) -> None:
    sys.exit(run_tool(build_parser(), _visualize, argv))


if __name__ == "__main__":
    main()
