"""``chakra_generator``: write microbenchmark Chakra ETs, one file per family and NPU."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Optional

from chakra.cli import arg_types
from chakra.cli.conventions import ToolArgumentParser
from chakra.cli.outputs import prepare_outputs
from chakra.cli.runner import add_log_level_option, run_tool
from chakra.tools.option_values import (
    GENERATOR_COMM_SIZE,
    GENERATOR_NUM_NPUS,
    GENERATOR_RUNTIME_US,
    GENERATOR_TENSOR_SIZE,
)

logger = logging.getLogger(__name__)


#: What the work imports, loaded once the arguments parse (:func:`~chakra.cli.runner.run_tool`).
LIBRARIES = ("chakra.tools.generator",)


def build_parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="chakra_generator",
        description="Write microbenchmark Chakra ETs (<family>.<npu>.et) for every NPU.",
    )
    parser.add_argument(
        "--num-npus",
        "--num_npus",
        dest="num_npus",
        metavar="N",
        type=arg_types.npus,
        default=GENERATOR_NUM_NPUS,
        help=f"1 to {arg_types.MAX_NPUS:,} (default: 64)",
    )
    parser.add_argument(
        "--default-runtime",
        "--default_runtime",
        dest="default_runtime",
        metavar="US",
        type=arg_types.nonneg_int,
        default=GENERATOR_RUNTIME_US,
        help="duration of compute nodes in microseconds (default: 5)",
    )
    parser.add_argument(
        "--default-tensor-size",
        "--default_tensor_size",
        dest="default_tensor_size",
        metavar="BYTES",
        type=arg_types.nonneg_int,
        default=GENERATOR_TENSOR_SIZE,
        help="bytes of memory and send/recv nodes (default: 1024)",
    )
    parser.add_argument(
        "--default-comm-size",
        "--default_comm_size",
        dest="default_comm_size",
        metavar="BYTES",
        type=arg_types.nonneg_int,
        default=GENERATOR_COMM_SIZE,
        help="bytes of collective nodes (default: 65536)",
    )
    parser.add_argument(
        "--output-dir",
        "--output_dir",
        dest="output_dir",
        default=".",
        metavar="DIR",
        help="existing folder to write into (default: the current folder)",
    )
    parser.add_argument(
        "--all-families",
        "--all_families",
        dest="all_families",
        action="store_true",
        help="also write the reference's families ASTRA-sim cannot run: a METADATA node, "
        "BARRIER, and a receive with no sender",
    )
    add_log_level_option(parser)
    return parser


def _generate(args: argparse.Namespace) -> None:
    from chakra.tools.generator import (  # after the arguments parse (a quick --help)
        GeneratorOptions,
        generate,
    )

    prepare_outputs([], folders=[args.output_dir])
    options = GeneratorOptions(
        num_npus=args.num_npus,
        runtime_us=args.default_runtime,
        tensor_size=args.default_tensor_size,
        comm_size=args.default_comm_size,
        all_families=args.all_families,
    )
    written = generate(options, args.output_dir)
    logger.info("wrote %d files to %s", len(written), args.output_dir)


def main(argv: Optional[Sequence[str]] = None) -> None:
    sys.exit(run_tool(build_parser(), _generate, argv, LIBRARIES))


if __name__ == "__main__":
    main()
