"""``chakra_visualizer``: draw a Chakra ET's dependency graph (.dot, .graphml, .pdf/.svg/.png),
whole or a window of it."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from chakra.cli import arg_types
from chakra.cli.outputs import prepare_outputs
from chakra.cli.runner import add_log_level_option, run_tool
from chakra.errors import ChakraError, UsageError
from chakra.tools.option_values import DEFAULT_MAX_NODES, DEFAULT_MAX_RENDERED_NODES

if TYPE_CHECKING:  # the library is imported once the arguments parse (a quick --help)
    from chakra.tools.visualize_window import NodeRange, Selection

logger = logging.getLogger(__name__)
WANTS = "a Chakra ET (.et, chakra_converter's output)"
MAX_DEPTH = 1000


#: What the work imports, loaded once the arguments parse (:func:`~chakra.cli.runner.run_tool`).
LIBRARIES = (
    "chakra.ingest.detect",
    "chakra.ingest.name_patterns",
    "chakra.tools.visualize",
    "chakra.tools.visualize_window",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chakra_visualizer",
        allow_abbrev=False,
        description=(
            "Draw the data (solid) and control (dashed) dependencies of a Chakra ET. Nodes"
            " show their short name, type, thread or stream and duration, filled by resource"
            " (CPU threads blue, GPU streams a hue each, communication red; a legend in"
            " dot), with the whole name as tooltip (GraphML: the name attribute)."
            " .dot and .graphml need nothing else; .pdf, .svg and .png are rendered by"
            " Graphviz (`apt-get install graphviz`). A graph too big to draw whole is drawn"
            " through a window: --nodes, --around/--depth, --name-filter, --collapse-gpu."
        ),
    )
    _add_files(parser)
    _add_window(parser)
    add_log_level_option(parser)
    return parser


def _add_window(parser: argparse.ArgumentParser) -> None:
    """The options that choose what part of the graph is drawn, and how much at most."""
    window = parser.add_argument_group("window (all given hold for every node drawn)")
    window.add_argument(
        "--rank",
        type=arg_types.int_in(0, 10**6, "rank"),
        help="with several files (a job's job.*.et): draw the file of this rank",
    )
    window.add_argument(
        "--nodes",
        dest="nodes",
        metavar="A-B",
        type=_node_range,
        help="only nodes with A <= id <= B (either end may be left out: 100-, --nodes=-99)",
    )
    window.add_argument(
        "--around",
        metavar="NODE",
        type=arg_types.int_in(0, 2**64 - 1, "node id"),
        help="only node NODE and the nodes within --depth dependency steps of it, upstream"
        " (what it waits for) and downstream (what waits for it)",
    )
    window.add_argument(
        "--depth",
        metavar="K",
        type=arg_types.int_in(0, MAX_DEPTH, "depth"),
        help="steps from --around's node (default: 2)",
    )
    window.add_argument(
        "--name-filter",
        dest="name_filter",
        metavar="PATTERN",
        type=_name_filter,
        help="only nodes whose whole name matches PATTERN, a shell pattern as --scale "
        "takes: * any characters, ? one ('*nccl*', 'aten::mm')",
    )
    window.add_argument(
        "--collapse-gpu",
        action="store_true",
        help="draw each GPU stream's run of consecutive ops (no other drawn node between"
        " them) as one node: its op count, ids and total duration",
    )
    window.add_argument(
        "--max-nodes",
        dest="max_nodes",
        metavar="N",
        type=arg_types.positive_int,
        help=f"refuse to draw more nodes than this (default: {DEFAULT_MAX_NODES:,} for .dot and"
        f" .graphml, {DEFAULT_MAX_RENDERED_NODES:,} for .pdf, .svg and .png, whose layout"
        " time grows fast with size)",
    )
    _hidden_aliases(window)


def _hidden_aliases(window: argparse._ArgumentGroup) -> None:
    """Earlier spellings, still taken, not shown: the underscore ones and --id-range."""
    window.add_argument(
        "--id-range", "--id_range", dest="nodes", type=_node_range, help=argparse.SUPPRESS
    )
    window.add_argument(
        "--name_filter", dest="name_filter", type=_name_filter, help=argparse.SUPPRESS
    )
    window.add_argument(
        "--max_nodes", dest="max_nodes", type=arg_types.positive_int, help=argparse.SUPPRESS
    )


def _add_files(parser: argparse.ArgumentParser) -> None:
    """--input and --output; the reference's --input_filename and --output_filename stay
    as hidden aliases."""
    given = parser.add_mutually_exclusive_group(required=True)
    given.add_argument(
        "--input",
        dest="inputs",
        nargs="+",
        metavar="FILE",
        help="Chakra ET file (.et); several (a job's job.*.et) with --rank",
    )
    given.add_argument(
        "--input_filename", dest="inputs", type=lambda path: [path], help=argparse.SUPPRESS
    )
    written = parser.add_mutually_exclusive_group(required=True)
    written.add_argument(
        "--output",
        dest="output",
        metavar="FILE",
        help="output; its extension (.dot, .graphml, .pdf, .svg, .png) picks the format",
    )
    written.add_argument("--output_filename", dest="output", help=argparse.SUPPRESS)


def _node_range(text: str) -> NodeRange:
    """argparse's type for --nodes: a malformed or empty range is a usage error."""
    from chakra.tools.visualize_window import parse_node_range

    try:
        return parse_node_range(text)
    except ChakraError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _name_filter(text: str) -> str:
    """argparse's type for --name-filter: an empty or overlong pattern is a usage error
    (status 2) before any work."""
    from chakra.ingest.name_patterns import compile_name_pattern

    try:
        compile_name_pattern(text)
    except ChakraError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _selection(args: argparse.Namespace) -> Selection:
    if args.depth is not None and args.around is None:
        raise UsageError("--depth counts steps from --around's node: give --around NODE")
    from chakra.tools.visualize_window import NodeRange, Selection

    nodes = args.nodes or NodeRange()
    return Selection(
        first=nodes.first,
        last=nodes.last,
        name_pattern=args.name_filter,
        around=args.around,
        depth=2 if args.depth is None else args.depth,
        collapse_gpu=args.collapse_gpu,
    )


def _visualize(args: argparse.Namespace) -> None:
    from chakra.ingest.detect import TraceKind, require_kind
    from chakra.tools.visualize import visualize
    from chakra.tools.visualize_window import rank_file

    selection = _selection(args)
    for path in args.inputs:
        require_kind(path, (TraceKind.CHAKRA_ET,), "chakra_visualizer", WANTS)
    prepare_outputs([args.output], args.inputs)
    source = rank_file(args.inputs, args.rank)
    count = visualize(source, args.output, selection, args.max_nodes)
    logger.info("drew %d nodes of %s into %s", count, source, args.output)


def main(argv: Optional[Sequence[str]] = None) -> None:
    sys.exit(run_tool(build_parser(), _visualize, argv, LIBRARIES))


if __name__ == "__main__":
    main()
