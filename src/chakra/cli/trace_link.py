"""``chakra_trace_link``: merge a host execution trace with its Kineto trace into ET+ (or,
without a host trace, make the host side from the Kineto trace alone).

Takes ``--host-trace``/``--device-trace`` and both spellings of the reference tool
(``--chakra-host-trace``/``--pytorch-et-file``, ``--chakra-device-trace``/``--kineto-file``),
and a batch form over folders of ranks.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from chakra.cli import arg_types
from chakra.cli.conventions import (
    ToolArgumentParser,
    add_profiler_step_option,
    add_rank_trace_options,
    check_rank_trace_kinds,
)
from chakra.cli.outputs import new_folder, prepare_outputs
from chakra.cli.runner import add_log_level_option, run_tool
from chakra.errors import ChakraError, UsageError

if TYPE_CHECKING:  # the library is imported once the arguments parse (a quick --help)
    from chakra.fileio import AtomicGroup
    from chakra.link.batch import Coverage
    from chakra.link.linked_trace import LinkOptions, LinkReport, RankResult

logger = logging.getLogger(__name__)


#: What the work imports, loaded once the arguments parse (:func:`~chakra.cli.runner.run_tool`).
LIBRARIES = (
    "chakra.fileio.atomic",
    "chakra.ingest.detect",
    "chakra.link.batch",
    "chakra.link.linked_trace",
    "chakra.link.report",
)


def build_parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="chakra_trace_link",
        description="Link a PyTorch host execution trace with its Kineto trace into ET+ JSON.",
    )
    _add_one_rank_options(parser.add_argument_group("one rank"))
    _add_batch_options(parser.add_argument_group("many ranks"))
    _add_linking_options(parser.add_argument_group("linking"))
    add_log_level_option(parser)
    return parser


def _add_one_rank_options(one: argparse._ArgumentGroup) -> None:
    add_rank_trace_options(one)
    one.add_argument("--output-file", help="ET+ JSON to write (.gz compresses)")
    one.add_argument(
        "--rank", type=arg_types.nonneg_int, help="rank of this pair (checked against the trace)"
    )


def _add_batch_options(many: argparse._ArgumentGroup) -> None:
    many.add_argument(
        "--host-dir",
        type=Path,
        help="folder of per-rank host traces (without it, each rank's host side is made "
        "from its Kineto trace alone)",
    )
    many.add_argument("--device-dir", type=Path, help="folder of per-rank Kineto traces")
    many.add_argument(
        "--output-dir",
        type=Path,
        help="folder for rank<r>.et_plus.json (created if needed); the files "
        "appear when every rank is linked, else none",
    )
    many.add_argument(
        "-j",
        "--jobs",
        type=arg_types.jobs,
        help=f"ranks linked in parallel (1 to {arg_types.MAX_JOBS:,}; default 1); with one "
        "rank (--device-trace), 2 or more loads its two traces side by side and writes it "
        "with two processes, the same file either way (default: 2 where this process may "
        "run on two or more cores)",
    )
    many.add_argument("--gzip", action="store_true", help="write rank<r>.et_plus.json.gz")


def _add_linking_options(how: argparse._ArgumentGroup) -> None:
    add_profiler_step_option(how)
    how.add_argument(
        "--iteration",
        type=arg_types.nonneg_int,
        help="which of several equally matching iterations to link (0-based)",
    )
    how.add_argument(
        "--allow-pid-mismatch",
        action="store_true",
        help="link traces whose process ids differ (else an error: they are not one run)",
    )
    how.add_argument(
        "--no-inferred",
        action="store_true",
        help="leave out the dependencies inferred from timing (waits the trace does not "
        "record: a start at the end of another stream's or thread's op; counted in the report)",
    )
    how.add_argument("--report", type=Path, help="write the link report as JSON")
    how.add_argument(
        "--strict",
        action="store_true",
        help="fail (no output) when coverage is below the thresholds, a match was rejected "
        "or evidence contradicts the measured times",
    )
    how.add_argument(
        "--min-host-coverage",
        type=arg_types.fraction,
        default=1.0,
        help="--strict: share of host ops that must be matched (default 1.0)",
    )
    how.add_argument(
        "--min-gpu-coverage",
        type=arg_types.fraction,
        default=1.0,
        help="--strict: share of GPU ops that must be linked (default 1.0)",
    )


def _options(args: argparse.Namespace) -> tuple[LinkOptions, Coverage]:
    from chakra.link.batch import Coverage
    from chakra.link.linked_trace import LinkOptions

    options = LinkOptions(
        profiler_step=args.profiler_step,
        iteration=args.iteration,
        allow_pid_mismatch=args.allow_pid_mismatch,
        inferred=not args.no_inferred,
    )
    coverage = (
        Coverage(args.min_host_coverage, args.min_gpu_coverage) if args.strict else Coverage()
    )
    return options, coverage


def _link_one(args: argparse.Namespace) -> None:
    wanted = (("--device-trace", args.device_trace), ("--output-file", args.output_file))
    missing = [flag for flag, value in wanted if not value]
    if missing:
        raise UsageError(f"missing {', '.join(missing)} (or use --device-dir)")
    from chakra.fileio import AtomicGroup
    from chakra.link.batch import link_files
    from chakra.link.report import render_table, write_report
    from chakra.workers import cores_available

    check_rank_trace_kinds(args.host_trace, args.device_trace, "chakra_trace_link")
    inputs = [path for path in (args.host_trace, args.device_trace) if path is not None]
    prepare_outputs([args.output_file, args.report], inputs)
    options, coverage = _options(args)
    with AtomicGroup() as group:  # the ET+ and its report, or neither
        report: LinkReport = link_files(
            args.host_trace,
            args.device_trace,
            args.output_file,
            options,
            coverage,
            args.rank,
            group,
            processes=args.jobs or min(2, cores_available()),
        )
        if args.report is not None:
            write_report(args.report, report, group)
    print(render_table(report, f"linked {args.output_file}"))


def _link_many(args: argparse.Namespace) -> None:
    if not (args.device_dir and args.output_dir):
        raise UsageError("--device-dir and --output-dir go together (--host-dir needs both)")
    from chakra.fileio import AtomicGroup
    from chakra.link.batch import link_ranks, pair_by_rank

    options, coverage = _options(args)
    pairs = pair_by_rank(args.host_dir, args.device_dir)  # a missing folder: nothing made
    suffix = ".json.gz" if args.gzip else ".json"
    outputs = [args.output_dir / f"rank{pair.rank}.et_plus{suffix}" for pair in pairs]
    inputs = [path for pair in pairs for path in pair.inputs]
    with new_folder(args.output_dir):
        prepare_outputs([*outputs, args.report], inputs, folders=[args.output_dir])
        with AtomicGroup() as group:  # the ranks' files and the report, or nothing
            results = link_ranks(
                pairs, args.output_dir, options, coverage, args.jobs or 1, suffix, group
            )
            _report_ranks(args, results, group)


def _report_ranks(
    args: argparse.Namespace, results: Sequence[RankResult], group: AtomicGroup
) -> None:
    """Print a line per rank; write the report when every rank succeeded, else raise."""
    from chakra.link.report import write_rank_reports

    for result in results:
        print(f"rank {result.rank}: {_rank_line(result)}")
    failed = [result for result in results if result.error]
    if failed:
        raise ChakraError(
            f"{len(failed)} of {len(results)} ranks failed, so no file was "
            f"written (first: rank {failed[0].rank}: {failed[0].error})"
        )
    if args.report is not None:
        write_rank_reports(args.report, results, group)


def _rank_line(result: RankResult) -> str:
    report = result.report
    if result.error or report is None:
        return f"error: {result.error}"
    return (
        f"{sum(report.matched.values())}/{report.host_ops} host ops, "
        f"{report.gpu_ops_linked} GPU ops linked"
    )


def _link(args: argparse.Namespace) -> None:
    if args.host_dir or args.device_dir:
        _link_many(args)
    else:
        _link_one(args)


def main(argv: Optional[Sequence[str]] = None) -> None:
    sys.exit(run_tool(build_parser(), _link, argv, LIBRARIES))


if __name__ == "__main__":
    main()
