"""``chakra_synth``: write a synthetic multi-rank workload (host ET + Kineto) with ground truth."""

from __future__ import annotations

import argparse
import logging
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from chakra.cli import arg_types
from chakra.cli.conventions import ToolArgumentParser
from chakra.cli.outputs import new_folder, prepare_outputs
from chakra.cli.runner import add_log_level_option, run_tool
from chakra.errors import ChakraError, SynthOptionsError, UsageError
from chakra.synth.option_values import MAX_OPS_PER_STEP, MAX_RANKS, MAX_STEPS, VINTAGES

if TYPE_CHECKING:  # the library is imported once the arguments parse (a quick --help)
    from chakra.synth.options import SynthOptions

logger = logging.getLogger(__name__)


#: What the work imports, loaded once the arguments parse (:func:`~chakra.cli.runner.run_tool`).
LIBRARIES = (
    "chakra.progress",
    "chakra.synth.options",
    "chakra.synth.job",
    "chakra.synth.invariants",
)


def build_parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="chakra_synth",
        description="Generate per-rank host ET and Kineto traces of a synthetic transformer "
        "training step, with the exact ground truth of what happened.",
    )
    parser.add_argument("--output-dir", "--out-dir", dest="output_dir",
                        required=True, help="folder to write (created if needed); its files "
                        "appear together when the whole job is written")  # fmt: skip
    parser.add_argument("--ranks", type=arg_types.int_in(1, MAX_RANKS), default=2,
                        help=f"number of ranks, 1 to {MAX_RANKS} (default: 2)")  # fmt: skip
    parser.add_argument("--seed", type=arg_types.nonneg_int, default=0,
                        help="random seed (default: 0)")  # fmt: skip
    parser.add_argument("--steps", type=arg_types.int_in(1, MAX_STEPS), default=2,
                        help="profiled steps (default: 2)")  # fmt: skip
    parser.add_argument("--ops-per-step", type=arg_types.int_in(1, MAX_OPS_PER_STEP),
                        default=200, help="approximate GPU ops per rank and step")  # fmt: skip
    parser.add_argument(
        "--vintage",
        action="append",
        default=[],
        choices=sorted(VINTAGES),
        help="trace vintage to imitate; repeat to combine (default: modern)",
    )
    parser.add_argument(
        "--host-step",
        type=arg_types.nonneg_int,
        default=None,
        help="0-based index of the only step the host ET covers (default: all steps)",
    )
    parser.add_argument(
        "--integer-timestamps", action="store_true", help="whole-µs timestamps in the traces"
    )
    parser.add_argument("--gzip", action="store_true", help="gzip the per-rank files")
    _add_program_options(parser)
    for resource, what in (("gpu", "kernel, memcpy and memset durations"),
                           ("cpu", "host op, gap and runtime call times"),
                           ("network", "collective transfer times")):  # fmt: skip
        parser.add_argument(
            f"--{resource}-factor",
            type=arg_types.finite_positive,
            default=1.0,
            metavar="F",
            help=f"multiply {what} by F > 0; same program, same random draws (default: 1)",
        )
    parser.add_argument(
        "--validate", action="store_true", help="re-read the output and check its invariants"
    )
    add_log_level_option(parser)
    return parser


def _add_program_options(parser: argparse.ArgumentParser) -> None:
    """What the program does besides the training step: extra threads and the hazards of
    real gloo jobs."""
    parser.add_argument(
        "--pageable-async-copy",
        action="store_true",
        help="add a cudaMemcpyAsync to pageable memory that blocks the CPU (a host sync)",
    )
    parser.add_argument(
        "--worker-threads",
        action="store_true",
        help="add a data-loader thread and a gloo-like worker running a CPU all_reduce",
    )
    parser.add_argument(
        "--blocking-gloo",
        action="store_true",
        help="add two blocking gloo collectives per step: the main thread waits for the "
        "worker's op in no op (self time of ProfilerStep#N or a user annotation)",
    )
    parser.add_argument(
        "--unrecorded-gloo-worker",
        type=_rank_list,
        default=(),
        metavar="RANKS",
        help="ranks (comma-separated, or 'all') whose gloo worker runs only gloo: ops, so "
        "their host ET has no thread for it; needs --worker-threads or --blocking-gloo",
    )
    parser.add_argument(
        "--stale-host-parents",
        action="store_true",
        help="DDP bucket copies after backward; they and Optimizer.step are filed in the host "
        "ET under an autograd op that had already ended",
    )


def _rank_list(text: str) -> object:
    """``all`` or comma-separated rank numbers (checked against ``--ranks`` later)."""
    if text.strip() == "all":
        return "all"
    try:
        return tuple(int(part, 10) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not 'all' or comma-separated rank numbers"
        ) from None


def _synth(args: argparse.Namespace) -> None:
    try:
        options = _options(args)
    except SynthOptionsError as exc:  # options that do not go together: a usage error
        raise UsageError(_in_flags(str(exc))) from None
    from chakra.progress import activity  # after the arguments parse (a quick --help)
    from chakra.synth import generate_job
    from chakra.synth.invariants import validate_job

    with new_folder(Path(args.output_dir)):
        prepare_outputs([], folders=[args.output_dir])
        with activity(f"generating {options.ranks} ranks (in lock step) into {args.output_dir}"):
            summary = generate_job(options, args.output_dir)
    gpu_ops = sum(rank.gpu_ops for rank in summary.ranks)
    logger.info("%d ranks, %d GPU ops, %d collectives", options.ranks, gpu_ops, summary.collectives)
    if args.validate:
        problems = validate_job(args.output_dir)
        if problems:
            raise ChakraError(f"{len(problems)} invariant(s) violated, first: {problems[0]}")
        logger.info("all invariants hold")


def _options(args: argparse.Namespace) -> SynthOptions:
    from chakra.synth.options import SynthOptions, options_with_vintages

    options = SynthOptions(
        seed=args.seed,
        ranks=args.ranks,
        steps=args.steps,
        ops_per_step=args.ops_per_step,
        host_step=args.host_step,
        integer_timestamps=args.integer_timestamps,
        gzip=args.gzip,
        gpu_factor=args.gpu_factor,
        cpu_factor=args.cpu_factor,
        network_factor=args.network_factor,
        pageable_async_copy=args.pageable_async_copy,
        worker_threads=args.worker_threads,
        blocking_gloo=args.blocking_gloo,
        unrecorded_gloo_ranks=(
            tuple(range(args.ranks))
            if args.unrecorded_gloo_worker == "all"
            else args.unrecorded_gloo_worker
        ),
        stale_host_parents=args.stale_host_parents,
    )
    return options_with_vintages(options, args.vintage)


def _in_flags(message: str) -> str:
    """A :class:`SynthOptions` error in the command line's words: its fields (``host_step``,
    ``unrecorded_gloo_ranks``) named by their options (``--host-step``)."""
    flags = {"unrecorded_gloo_ranks": "--unrecorded-gloo-worker"}
    for action in build_parser()._actions:
        flags.setdefault(action.dest, action.option_strings[0] if action.option_strings else "")
    first, _, rest = message.partition(" ")
    if flags.get(first):  # the option the message is about leads it
        message = f"argument {flags[first]}: {rest}"
    return re.sub(r"\b[a-z]+(?:_[a-z]+)+\b", lambda m: flags.get(m[0]) or m[0], message)


def main(argv: Optional[Sequence[str]] = None) -> None:
    sys.exit(run_tool(build_parser(), _synth, argv, LIBRARIES))


if __name__ == "__main__":
    main()
