"""``chakra_converter``: ET+ (linked PyTorch traces) -> Chakra ET protobuf.

Both reference interfaces: ``chakra_converter [--log-filename F] PyTorch --input X --output Y
[--simulate]`` (1.0) and ``chakra_converter --input_type PyTorch --input_filename X
--output_filename Y [--simulate]`` (0.0.4). ``Text`` converts an ASTRA-sim text workload into
``<output>.<npu>.et`` per NPU (``--num-npus``/``--num-passes``, or ``--num_npus``/``--num_passes``).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from chakra.cli import arg_types
from chakra.cli.conventions import ToolArgumentParser
from chakra.cli.outputs import log_file, prepare_outputs
from chakra.cli.runner import add_log_level_option, run_tool
from chakra.errors import UsageError
from chakra.text.limits import DEFAULT_MAX_NODES, DEFAULT_MAX_OUTPUT_BYTES, MAX_NODES_PER_NPU

if TYPE_CHECKING:  # the library is imported once the arguments parse (a quick --help)
    from chakra.convert import ConvertOptions
    from chakra.fileio import AtomicGroup

logger = logging.getLogger(__name__)
#: The records of --log-filename.
LOG_FORMAT = "%(levelname)s [%(asctime)s] %(message)s"

#: What the work imports, loaded once the arguments parse (:func:`~chakra.cli.runner.run_tool`).
LIBRARIES = ("chakra.convert", "chakra.convert.astra_sim", "chakra.convert.group_file",
             "chakra.fileio.atomic", "chakra.ingest.detect", "chakra.text.budget",
             "chakra.text.convert")  # fmt: skip

#: The usage line: the two conversions first, then what the tool takes before either.
USAGE = """%(prog)s PyTorch --input ET+.json --output OUT.et [options]
       %(prog)s Text --input WORKLOAD.txt --output PREFIX --num-npus N --num-passes P [options]
       %(prog)s [--log-filename FILE] [--log-level LEVEL] {PyTorch,Text} ..."""


def _add_pytorch_options(parser: argparse.ArgumentParser, shown: bool = True) -> None:
    """PyTorch's options (hidden from the top level's help: the flat interface's)."""

    def described(text: str) -> str:
        return text if shown else argparse.SUPPRESS

    parser.add_argument(
        "--no-gaps",
        action="store_true",
        help=described("do not replay measured idle time between top-level CPU ops"),
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=arg_types.int_in(1, 2, "1 or 2"),
        metavar="N",
        help=described(
            "processes that build the nodes, 1 or 2, the same file either way (default: 2 "
            "where this process may run on two or more cores)"
        ),
    )
    parser.add_argument(
        "--validate",
        action="store_true",
        help=described("check the written graph (ids, deps, acyclic, attributes)"),
    )
    parser.add_argument(
        "--simulate",
        action="store_true",
        help=described("simulate the converted graph and print its makespan"),
    )
    parser.add_argument(
        "--rank",
        type=arg_types.nonneg_int,
        metavar="R",
        help=described(
            "this trace's global rank (default: the one Kineto recorded), for the ends of send/recv"
        ),
    )
    parser.add_argument(
        "--astra-sim-profile",
        choices=("full", "fold"),
        default="full",
        help=described(
            "full: the whole graph (threads, streams); fold: the rank's replayed timeline as "
            "one chain of compute pieces around its communications, for ASTRA-sim's one CPU, "
            "GPU and network slot per rank (the ring bandwidth that finishes every rank at "
            "its measured step needs the whole job: chakra_pipeline --astra-sim-profile fold)"
        ),
    )
    parser.add_argument(
        "--process-group-metadata",
        action="store_true",
        help=described(
            "write the process group table as a METADATA node in the form ASTRA-sim parses "
            "(the ASTRA-sim of 2026-03 aborts on any METADATA node)"
        ),
    )


def build_parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="chakra_converter",
        usage=USAGE,
        description="Convert linked PyTorch traces (ET+ JSON, chakra_trace_link's output) "
        "or an ASTRA-sim text workload into Chakra ET (.et) graphs. Each conversion's "
        "options: chakra_converter PyTorch --help, chakra_converter Text --help.",
        epilog="The reference's flat interface (version 0.0.4: the input type, input and "
        "output files as options) is still accepted: docs/differences-from-reference.md.",
    )
    _add_log_options(parser, None)
    _add_flat_interface(parser)
    commands = parser.add_subparsers(dest="command", title="conversions", metavar="{PyTorch,Text}")
    pytorch = commands.add_parser(
        "PyTorch",
        prog="chakra_converter PyTorch",
        help="ET+ JSON -> Chakra ET: chakra_converter PyTorch --input ET+.json --output OUT.et",
        description="Convert one rank's ET+ JSON (or a host execution trace, untimed) into a "
        "Chakra ET.",
    )
    pytorch.add_argument(
        "--input", required=True, metavar="FILE", help="ET+ JSON (chakra_trace_link output)"
    )
    pytorch.add_argument(
        "--output", required=True, metavar="FILE", help=".et file to write (.gz compresses)"
    )
    _add_pytorch_options(pytorch)
    _add_log_options(pytorch, argparse.SUPPRESS)
    _add_text_parser(commands)
    return parser


def _add_flat_interface(parser: argparse.ArgumentParser) -> None:
    """The reference's 0.0.4 interface, accepted and hidden from the help: ``--input_type
    PyTorch|Text --input_filename X --output_filename Y`` (``--num_npus``, ``--num_passes``
    for Text), with PyTorch's and Text's options before no subcommand."""
    hidden = argparse.SUPPRESS
    parser.add_argument("--input_type", help=hidden)
    parser.add_argument("--input_filename", help=hidden)
    parser.add_argument("--output_filename", help=hidden)
    parser.add_argument("--num_npus", type=arg_types.npus, help=hidden)
    parser.add_argument("--num_passes", type=arg_types.passes, help=hidden)
    _add_budget_options(parser, None, shown=False)
    _add_pytorch_options(parser, shown=False)


def _add_text_parser(commands: argparse._SubParsersAction) -> None:
    text = commands.add_parser(
        "Text",
        prog="chakra_converter Text",
        help="ASTRA-sim text workload -> <output>.<npu>.et: chakra_converter Text --input "
        "W.txt --output PREFIX --num-npus N --num-passes P",
        description="Convert an ASTRA-sim text workload into one Chakra ET per NPU, "
        "PREFIX.<npu>.et.",
    )
    text.add_argument(
        "--input", required=True, metavar="FILE", help="ASTRA-sim text workload (.txt)"
    )
    text.add_argument(
        "--output",
        required=True,
        metavar="PREFIX",
        help="output prefix: writes <output>.<npu>.et for every NPU",
    )
    text.add_argument(
        "--num-npus",
        "--num_npus",
        dest="num_npus",
        type=arg_types.npus,
        required=True,
        metavar="N",
        help=f"NPUs to write a file for (1 to {arg_types.MAX_NPUS:,})",
    )
    text.add_argument(
        "--num-passes",
        "--num_passes",
        dest="num_passes",
        type=arg_types.passes,
        required=True,
        metavar="P",
        help="training passes (iterations) to unroll (1 to "
        f"{arg_types.MAX_PASSES:,}; at most {MAX_NODES_PER_NPU:,} nodes "
        "per file)",
    )
    _add_budget_options(text, argparse.SUPPRESS)  # not over the flat interface's value
    _add_log_options(text, argparse.SUPPRESS)


def _add_log_options(parser: argparse.ArgumentParser, default: Optional[str]) -> None:
    """--log-filename and --log-level, before or after the subcommand (a subcommand's
    parser passes ``argparse.SUPPRESS``: it sets them only when given there)."""
    parser.add_argument(
        "--log-filename",
        "--log_filename",
        dest="log_filename",
        default=default,
        metavar="FILE",
        help="also write the log to this file (replaced when the tool ends)",
    )
    add_log_level_option(parser, "INFO" if default is None else default)


def _add_budget_options(
    parser: argparse.ArgumentParser, default: Optional[str], shown: bool = True
) -> None:
    """Text's work budget, checked before anything is built or written (unset: the
    defaults of :mod:`chakra.text.budget`); hidden from the top level's help."""
    parser.add_argument(
        "--max-nodes",
        "--max_nodes",
        dest="max_nodes",
        type=arg_types.positive_int,
        default=default,
        metavar="N",
        help="refuse, before writing anything, to write more nodes than this in all files "
        f"together (default: {DEFAULT_MAX_NODES:,})"
        if shown
        else argparse.SUPPRESS,
    )
    parser.add_argument(
        "--max-output-bytes",
        "--max_output_bytes",
        dest="max_output_bytes",
        type=arg_types.positive_int,
        default=default,
        metavar="BYTES",
        help="refuse, before writing anything, when the files together would take more "
        f"bytes than this, estimated from the workload (default: {DEFAULT_MAX_OUTPUT_BYTES:,}"
        " = 4 GiB); the space free in the output folder is checked too"
        if shown
        else argparse.SUPPRESS,
    )


def _paths(args: argparse.Namespace) -> tuple[str, str]:
    """The input and the output (a file, or Text's prefix) of either interface."""
    source = getattr(args, "input", None) or args.input_filename
    target = getattr(args, "output", None) or args.output_filename
    if not source or not target:
        raise UsageError("missing --input/--output (or --input_filename/--output_filename)")
    return source, target


def _convert_text(args: argparse.Namespace, source: str, prefix: str) -> None:
    from chakra.text.budget import TextBudget
    from chakra.text.convert import output_paths, plan_text, write_text

    if args.num_npus is None or args.num_passes is None:
        raise UsageError("Text conversion needs --num-npus and --num-passes")
    budget = TextBudget(
        args.max_nodes or DEFAULT_MAX_NODES,
        args.max_output_bytes or DEFAULT_MAX_OUTPUT_BYTES,
    )
    prepare_outputs([args.log_filename], [source])
    with log_file(args.log_filename, LOG_FORMAT):
        # the budget before the checks of the many output paths: a huge job is refused at once
        plan = plan_text(source, prefix, args.num_npus, args.num_passes, budget)
        prepare_outputs(output_paths(prefix, args.num_npus), [source])
        paths = write_text(plan, prefix)
        logger.info("wrote %d files: %s ... %s", len(paths), paths[0], paths[-1])


def _convert(args: argparse.Namespace) -> None:
    kind = args.command or args.input_type
    if kind not in ("PyTorch", "Text"):
        raise UsageError("choose a conversion: PyTorch or Text (see --help)")
    source, target = _paths(args)
    if kind == "Text":
        _convert_text(args, source, target)
        return
    from chakra.convert.astra_sim import comm_groups_path
    from chakra.ingest.detect import TraceKind, require_kind

    require_kind(
        source,
        (TraceKind.ET_PLUS, TraceKind.HOST_ET, TraceKind.KINETO),
        "chakra_converter",
        "an ET+ (chakra_trace_link's output), a host execution trace or a Kineto trace",
    )
    groups = comm_groups_path(Path(target))
    prepare_outputs([target, groups, args.log_filename], [source])
    with log_file(args.log_filename, LOG_FORMAT), _linked_if_kineto(source) as et_plus:
        _convert_pytorch(args, et_plus, target, groups)


@contextlib.contextmanager
def _linked_if_kineto(source: str) -> Iterator[str]:
    """``source``, or, when it is a Kineto trace, the ET+ of it alone (the host side made
    from its CPU ops, the last complete step: as ``chakra_trace_link --device-trace``),
    in a temporary folder removed after the block."""
    import tempfile

    from chakra.ingest.detect import TraceKind, trace_kind

    if trace_kind(source) is not TraceKind.KINETO:
        yield source
        return
    from chakra.link import LinkOptions
    from chakra.link.batch import link_files

    with tempfile.TemporaryDirectory(prefix="chakra-converter-") as folder:
        et_plus = str(Path(folder) / "et_plus.json")
        link_files(None, source, et_plus, LinkOptions())
        yield et_plus


def _convert_pytorch(args: argparse.Namespace, source: str, target: str, groups: Path) -> None:
    """Convert ``source`` into ``target`` and add its groups to the file ``groups``: both
    appear together or neither does. The group file there is read and checked before any
    work (:mod:`chakra.convert.group_file`); the new one is checked against it before
    either file is written."""
    from chakra.cli.converted_graph import print_simulation, validate_before_commit
    from chakra.convert import ConvertOptions
    from chakra.convert.group_file import merged_comm_groups, read_comm_groups, write_comm_groups
    from chakra.fileio import AtomicGroup
    from chakra.workers import cores_available

    existing = read_comm_groups(groups)
    options = ConvertOptions(
        gaps=not args.no_gaps,
        rank=args.rank,
        require_peers=True,
        process_group_metadata=args.process_group_metadata,
    )
    with AtomicGroup() as outputs:  # the .et appears only once it has passed --validate
        processes = args.jobs or min(2, cores_available())
        report = _converted(source, target, options, outputs, args.astra_sim_profile, processes)
        if args.validate:
            validate_before_commit(outputs, target)
        if report.comm_groups:
            table = merged_comm_groups(groups, existing, report.comm_groups, source)
            write_comm_groups(groups, table, outputs)
    types = ", ".join(f"{n} {name}" for name, n in report.nodes_by_type.items())
    total = sum(report.nodes_by_type.values())
    logger.info("wrote %d nodes (%s) to %s", total, types, target)
    if report.comm_groups:
        logger.info("ASTRA-sim communicator groups in %s (--comm-group-configuration)", groups)
    if args.simulate:
        print_simulation(target)


def _converted(
    source: str, target: str, options: ConvertOptions, outputs: AtomicGroup, profile: str,
    processes: int = 1,
) -> Any:  # fmt: skip
    """Convert ``source`` into ``target`` (in ``outputs``) by ``processes`` processes; with
    the ``fold`` profile, the fold of the graph as it replays alone
    (:mod:`chakra.simulate.fold`)."""
    import tempfile

    from chakra.convert import convert_file

    if profile != "fold":
        return convert_file(source, target, options, outputs, processes)
    from chakra.et.reader import EtReader
    from chakra.et.writer import write_et
    from chakra.simulate import build_graph, simulate
    from chakra.simulate.fold import fold_job, fold_metadata

    with tempfile.TemporaryDirectory(prefix="chakra-converter-") as folder:
        full = Path(folder) / "full.et"
        report = convert_file(source, full, options, processes=processes)
        with EtReader(full) as reader:
            metadata, nodes = reader.metadata, list(reader)
    replay = simulate([build_graph(nodes, 0)])
    (folded,) = fold_job([nodes], replay)
    write_et(target, fold_metadata(metadata, None), folded, outputs)
    return report


def main(argv: Optional[Sequence[str]] = None) -> None:
    arguments = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    if not arguments:  # the help, as the reference prints it, but as a usage error (status 2)
        parser.print_help(sys.stderr)
        print(f"{parser.prog}: error: choose a conversion: PyTorch or Text", file=sys.stderr)
        sys.exit(2)
    sys.exit(run_tool(parser, _convert, arguments, LIBRARIES))


if __name__ == "__main__":
    main()
