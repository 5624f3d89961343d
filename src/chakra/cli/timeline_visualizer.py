"""``chakra_timeline_visualizer``: a simulator log as a Chrome trace, times in microseconds."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Optional

from chakra.cli import arg_types
from chakra.cli.conventions import ToolArgumentParser, add_file_options
from chakra.cli.outputs import log_file, prepare_outputs
from chakra.cli.runner import add_log_level_option, run_tool
from chakra.errors import UsageError
from chakra.tools.option_values import INPUT_FORMATS

logger = logging.getLogger(__name__)


#: What the work imports, loaded once the arguments parse (:func:`~chakra.cli.runner.run_tool`).
LIBRARIES = (
    "chakra.fileio.atomic",
    "chakra.ingest.json_input",
    "chakra.tools.log_timeline",
)


def build_parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="chakra_timeline_visualizer",
        description=(
            "Turn an ASTRA-sim issue/callback log (or a chakra_sim --timeline trace) into a"
            " Chrome/Perfetto trace with times in microseconds."
        ),
    )
    add_file_options(parser, "simulator log or trace", "Chrome trace JSON to write")
    parser.add_argument(
        "--num-npus",
        "--num_npus",
        dest="num_npus",
        type=arg_types.npus,
        metavar="N",
        help=f"NPUs in the log (astra-sim format; 1 to {arg_types.MAX_NPUS:,})",
    )
    parser.add_argument(
        "--npu-frequency",
        "--npu_frequency",
        dest="npu_frequency",
        type=arg_types.finite_positive,
        metavar="MHZ",
        help="NPU clock in MHz, to turn cycles into microseconds (astra-sim format)",
    )
    parser.add_argument(
        "--input-format",
        "--input_format",
        dest="input_format",
        choices=INPUT_FORMATS,
        default="astra-sim",
        help="astra-sim: issue/callback log (default); chakra-sim: chakra_sim --timeline JSON",
    )
    parser.add_argument(
        "--log-filename",
        "--log_filename",
        dest="log_filename",
        metavar="FILE",
        help="also write this tool's log to this file (replaced when the tool ends)",
    )
    add_log_level_option(parser)
    return parser


def _convert(args: argparse.Namespace) -> None:
    from chakra.fileio import atomic_output  # after the arguments parse (a quick --help)
    from chakra.ingest.json_input import dump_finite
    from chakra.tools.log_timeline import complete_events, timeline

    if args.input_format == "astra-sim" and (args.num_npus is None or args.npu_frequency is None):
        raise UsageError("the astra-sim log format needs --num-npus and --npu-frequency")
    prepare_outputs([args.output, args.log_filename], [args.input])
    with log_file(args.log_filename):
        trace = timeline(args.input, args.input_format, args.num_npus, args.npu_frequency)
        with atomic_output(args.output, text=True) as out:
            dump_finite(trace, out, args.output)
        logger.info("wrote %d events to %s", len(complete_events(trace)), args.output)


def main(argv: Optional[Sequence[str]] = None) -> None:
    sys.exit(run_tool(build_parser(), _convert, argv, LIBRARIES))


if __name__ == "__main__":
    main()
