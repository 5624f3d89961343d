"""``chakra_pipeline``: host + device traces of one or many ranks -> ET+, .et, simulation,
what-if runs, report (JSON and HTML), timeline and plot in one folder, with a summary
table."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional, Union

from chakra.cli import arg_types
from chakra.cli.conventions import (
    ToolArgumentParser,
    add_profiler_step_option,
    add_rank_trace_options,
    check_rank_trace_kinds,
)
from chakra.cli.runner import add_log_level_option, run_tool
from chakra.errors import ChakraError, UsageError
from chakra.pipeline.option_values import ET_PREFIX, PROFILES, TIMELINE_ALL, TIMELINE_AUTO
from chakra.simulate.default_scenarios import DEFAULT_SCENARIO_TEXTS
from chakra.views.rank_counts import ALL_RANKS_UP_TO

if TYPE_CHECKING:  # the library is imported once the arguments parse (a quick --help)
    from chakra.fileio.location import Location
    from chakra.pipeline import RankFiles
    from chakra.pipeline.run import PipelineResult
    from chakra.simulate.scenarios import Scenario
    from chakra.views.timeline_window import WindowChoice


#: What the work imports, loaded once the arguments parse (:func:`~chakra.cli.runner.run_tool`).
LIBRARIES = (
    "chakra.convert.astra_sim",
    "chakra.ingest.detect",
    "chakra.link",
    "chakra.pipeline.run",
    "chakra.pipeline.inputs",
    "chakra.pipeline.astra_profile",
    "chakra.pipeline.resume",
    "chakra.pipeline.timeline_file",
    "chakra.simulate.scenarios",
    "chakra.views.job",
    "chakra.views.timeline_window",
)


def location(text: str) -> Location:
    """argparse's type for the paths and URLs (:func:`chakra.fileio.location.location`),
    loaded once one is given (a quick --help)."""
    from chakra.fileio.location import location

    return location(text)


def _scenario(text: str) -> Scenario:
    """argparse's type for --what-if: a bad scenario is a usage error (status 2)."""
    from chakra.simulate.scenarios import Scenario

    try:
        return Scenario.parse(text)
    except ChakraError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--what-if ")) from exc


def _timeline_ranks(text: str) -> Union[str, tuple[int, ...]]:
    """argparse's type for --timeline-ranks: auto, all or comma-separated rank ids."""
    if text in (TIMELINE_AUTO, TIMELINE_ALL):
        return text
    try:
        ranks = [int(part) for part in text.split(",")]
    except ValueError:
        ranks = []
    if not ranks or min(ranks) < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: auto, all or rank ids (0,3,7)")
    return tuple(ranks)


def _timeline_window(text: str) -> WindowChoice:
    """argparse's type for --timeline-window: a bad value is a usage error (status 2)."""
    from chakra.views.timeline_window import WindowChoice

    try:
        return WindowChoice.parse(text)
    except ChakraError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--timeline-window ")) from exc


def _add_output_options(parser: argparse.ArgumentParser) -> None:
    """The options that choose the job-wide outputs: plot, page and what-if scenarios."""
    parser.add_argument("--no-plot", action="store_true", help="skip the utilisation plot")
    parser.add_argument(
        "--no-html",
        action="store_true",
        help="skip report.html (report.json as a self-contained page)",
    )
    parser.add_argument(
        "--timeline-ranks",
        type=_timeline_ranks,
        default=TIMELINE_AUTO,
        metavar="auto|all|R[,R...]",
        help=f"the ranks timeline.json shows: auto (default: every rank up to "
        f"{ALL_RANKS_UP_TO}, else the slowest, median and fastest, as utilisation.png; a "
        "64-rank timeline of every rank is hundreds of MB, which Perfetto's UI loads into "
        "memory), all, or rank ids",
    )
    parser.add_argument(
        "--timeline-window",
        type=_timeline_window,
        metavar="A-B|step:N[-M]",
        help="timeline.json shows only this stretch: A-B in µs of its clock, or training steps "
        "(ProfilerStep#N to #M)",
    )
    parser.add_argument("--no-timeline", action="store_true", help="skip timeline.json")
    defaults = ", ".join(f"'{text.name}={text.rules}'" for text in DEFAULT_SCENARIO_TEXTS)
    what_if = parser.add_mutually_exclusive_group()
    what_if.add_argument(
        "--what-if",
        action="append",
        type=_scenario,
        metavar="NAME=RULE[,RULE...]",
        help="a what-if scenario run after the replay, reported in report.json and "
        "report.html: NAME, then rules as chakra_sim --scale takes them (TARGET=FACTOR: "
        "compute, comm, cpu, gpu, delay, idle, name:TEXT or a name pattern; TARGET may "
        "carry qualifiers @shape:, @scope:, @rank:, whose commas inside [ ] do not split "
        "rules), e.g. 'GPU 2x faster=gpu=0.5' or 'wide fc1=aten::addmm@shape:[[48],[8,16],"
        f"[16,48],[],[]]=2'; repeatable; replaces the defaults ({defaults}; one whose "
        "first rule matches no node is skipped, its other rules matching none are left "
        "out); a scenario of yours with a rule that matches no node is skipped with a warning",
    )
    what_if.add_argument(
        "--no-what-if",
        action="store_true",
        help="run no what-if scenario (each costs one simulation more)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="chakra_pipeline",
        description="Link, convert and simulate PyTorch traces of one or many ranks. "
        "Every path may also be a URL (s3://bucket/job/, file:///shared/job, ...), "
        "read and written through fsspec.",
    )
    _add_input_options(parser)
    _add_output_options(parser)
    _add_conversion_options(parser)
    _add_execution_options(parser)
    add_log_level_option(parser)
    return parser


def _add_input_options(parser: argparse.ArgumentParser) -> None:
    """Where the traces are and the outputs go, and how many ranks run at once."""
    add_rank_trace_options(parser, location)
    parser.add_argument(
        "--host-dir",
        type=location,
        help="many ranks: folder of host traces (without it, each rank's host side is made "
        "from its Kineto trace)",
    )
    parser.add_argument("--device-dir", type=location, help="many ranks: folder of Kineto traces")
    parser.add_argument(
        "--trace-dir",
        type=location,
        help="many ranks: one folder holding both (rank<r>.host_et.json[.gz] "
        "and rank<r>.kineto.json[.gz], or the reference's names), or Kineto traces alone",
    )
    parser.add_argument("--output-dir", type=location, required=True, help="folder for the outputs")
    parser.add_argument(
        "-j",
        "--jobs",
        type=arg_types.jobs,
        default=1,
        help=f"ranks prepared in parallel (1 to {arg_types.MAX_JOBS:,})",
    )


def _add_conversion_options(parser: argparse.ArgumentParser) -> None:
    """How ranks are linked and their graphs written."""
    add_profiler_step_option(parser)
    parser.add_argument(
        "--astra-sim-profile",
        choices=PROFILES,
        default="full",
        help="the .et family handed to ASTRA-sim: full (PREFIX.<r>.et, what chakra_sim "
        "replays) or fold (also PREFIX_fold.<r>.et: communication kept, the rest folded "
        "into the chain of time that bounded the measured step, so that ASTRA-sim's one "
        "CPU, GPU and network slot per rank replay the measured step; with the ring "
        "bandwidth that reproduces the measured collectives)",
    )
    parser.add_argument(
        "--allow-pid-mismatch",
        action="store_true",
        help="link host and device traces whose process ids differ "
        "(else an error: they are not one run)",
    )
    parser.add_argument(
        "--no-inferred",
        action="store_true",
        help="link without the dependencies inferred from timing (see chakra_trace_link)",
    )
    parser.add_argument(
        "--et-prefix",
        default=ET_PREFIX,
        type=arg_types.file_prefix,
        metavar="PREFIX",
        help="write the graphs as PREFIX.<rank>.et, the family ASTRA-sim loads "
        f"(default: {ET_PREFIX})",
    )
    parser.add_argument(
        "--process-group-metadata",
        action="store_true",
        help="write the process group table as a METADATA node in the form "
        "ASTRA-sim parses (the ASTRA-sim of 2026-03 aborts on any "
        "METADATA node; by default the groups go to "
        "PREFIX.comm_groups.json)",
    )


def _add_execution_options(parser: argparse.ArgumentParser) -> None:
    """Resuming, the memory budget and where the per-rank work runs."""
    parser.add_argument(
        "--no-resume",
        action="store_true",
        help="redo every rank, even those finished earlier from the same inputs",
    )
    parser.add_argument(
        "--max-memory",
        type=arg_types.finite_positive,
        metavar="GB",
        help="memory budget (GiB) for ranks in flight, each estimated at 2x "
        "its uncompressed input size; at least one rank always runs",
    )
    parser.add_argument(
        "--executor",
        choices=("process", "dask"),
        default="process",
        help="where ranks are prepared: local processes (default) or Dask",
    )
    parser.add_argument(
        "--scheduler",
        type=arg_types.scheduler_address,
        metavar="ADDRESS",
        help="with --executor dask: scheduler address (tcp://host:8786), or "
        "local:N to start N local worker processes; paths must be on a "
        "file system the workers share",
    )


def _ranks(args: argparse.Namespace) -> list[RankFiles]:
    from chakra.pipeline import RankFiles, ranks_in_folder
    from chakra.pipeline.inputs import ranks_in_folders

    if args.trace_dir:
        return ranks_in_folder(args.trace_dir)
    if args.host_dir or args.device_dir:
        if not args.device_dir:
            raise UsageError("--host-dir needs --device-dir")
        return ranks_in_folders(args.host_dir, args.device_dir)
    if not args.device_trace:
        raise UsageError(
            "give --device-trace (and --host-trace, if there is one), or --trace-dir, or "
            "--device-dir (and --host-dir)"
        )
    check_rank_trace_kinds(args.host_trace, args.device_trace, "chakra_pipeline")
    return [RankFiles(0, args.host_trace, args.device_trace)]


def _scenarios(args: argparse.Namespace) -> Optional[list[Scenario]]:
    """The --what-if scenarios (None: the defaults; empty: --no-what-if)."""
    if args.no_what_if:
        return []
    if not args.what_if:
        return None
    names = [scenario.name for scenario in args.what_if]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise UsageError(f"--what-if: scenario {twice[0]!r} is given twice")
    return list(args.what_if)


def _run(args: argparse.Namespace) -> None:
    if args.scheduler and args.executor != "dask":
        raise UsageError("--scheduler goes with --executor dask")
    scenarios = _scenarios(args)
    from chakra.fileio.location import name_of
    from chakra.link import LinkOptions
    from chakra.pipeline import run_pipeline
    from chakra.pipeline.run import summary_text
    from chakra.pipeline.timeline_file import TimelineOptions

    result = run_pipeline(
        _ranks(args),
        args.output_dir,
        jobs=args.jobs,
        options=LinkOptions(
            profiler_step=args.profiler_step,
            allow_pid_mismatch=args.allow_pid_mismatch,
            inferred=not args.no_inferred,
        ),
        plot=not args.no_plot,
        resume=not args.no_resume,
        max_memory_gb=args.max_memory,
        executor=args.executor,
        scheduler=args.scheduler,
        et_prefix=args.et_prefix,
        process_group_metadata=args.process_group_metadata,
        what_if=scenarios,
        html=not args.no_html,
        timeline=TimelineOptions(not args.no_timeline, args.timeline_ranks, args.timeline_window),
        astra_sim_profile=args.astra_sim_profile,
    )
    if result.reused:
        print(
            f"reused {len(result.reused)} of {len(result.ranks)} ranks from an earlier run "
            "(same inputs, by content; --no-resume redoes them)",
            file=sys.stderr,
        )
    print(summary_text(result))
    page = f" and {name_of(result.html)} (open in a browser)" if result.html else ""
    timeline = result.timeline
    print(
        f"outputs in {result.output_dir}: report {name_of(result.report)}{page}"
        + (f", timeline {name_of(timeline)} (open in https://ui.perfetto.dev)" if timeline else "")
        + (f", plot {name_of(result.plot)}" if result.plot else "")
    )
    if result.et_prefix is not None:
        _print_astra_sim(result)


def _print_astra_sim(result: PipelineResult) -> None:
    """The ASTRA-sim command for the family handed to it, and, for the fold, the network
    that reproduces the measured collectives."""
    from chakra.convert.astra_sim import command_line
    from chakra.fileio.location import name_of

    family = result.astra_sim
    prefix = family.prefix if family is not None else result.et_prefix
    print(f"ASTRA-sim: {command_line(prefix, result.comm_groups)}")
    if family is not None and family.profile == "fold":
        fitted = (f"run.py --gbps {family.gbps:.4g} --latency-ns {family.latency_ns:.0f}: "
                  "finishes at " + ", ".join(f"{r:.3f}" for r in family.ratios)
                  + " of the ranks' measured steps")  # fmt: skip
        print(f"  ({name_of(prefix)}.<r>.et: the fold; with {fitted})")
    if len(result.ranks) == 1:
        print(
            "  (ASTRA-sim's analytical network needs 2 NPUs or more: to run one rank, "
            f"copy {name_of(prefix)}.0.et to {name_of(prefix)}.1.et)"
        )


def main(argv: Optional[Sequence[str]] = None) -> None:
    sys.exit(run_tool(build_parser(), _run, argv, LIBRARIES))


if __name__ == "__main__":
    main()
