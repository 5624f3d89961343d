"""``chakra_sim``: replay Chakra ET graphs (one per rank) and report their makespans."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from chakra.cli.conventions import ToolArgumentParser
from chakra.cli.outputs import prepare_outputs
from chakra.cli.runner import add_log_level_option, each_input, run_tool
from chakra.errors import ChakraError, UsageError

if TYPE_CHECKING:  # the library is imported once the arguments parse (a quick --help)
    from chakra.simulate import PathEntry, RankResult, ScaleRule, SimResult
    from chakra.simulate.replay import Replay

THREADS_STREAMS, ASTRA_SIM = "threads-streams", "astra-sim"
logger = logging.getLogger(__name__)


#: What the work imports, loaded once the arguments parse (:func:`~chakra.cli.runner.run_tool`):
#: matplotlib only with a picture asked for.
LIBRARIES = ("chakra.fileio.atomic", "chakra.ingest.detect", "chakra.simulate")


def build_parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="chakra_sim",
        description="Simulate Chakra ET graphs (.et, .et.gz or ET+ JSON), one file per rank.",
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="FILE",
        help="one graph per rank, each file's rank the one its metadata holds "
        "(chakra_converter writes it) or its name gives (PREFIX.<rank>.et, "
        "rank<rank>.et_plus.json), whatever the order given",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--timeline", type=Path, help="write the schedule as a Chrome trace")
    _add_replay_options(parser)
    _add_picture_options(parser)
    add_log_level_option(parser)
    return parser


def _add_replay_options(parser: argparse.ArgumentParser) -> None:
    """How nodes share the hardware (``--serialize-gpu``, ``--resources``) and the what-if
    run (``--scale``, ``--network``)."""
    parser.add_argument(
        "--lenient",
        action="store_true",
        help="simulate a graph that fails the checks of chakra_validate --no-astra-sim "
        "anyway (dangling or self deps left out, a value of the wrong kind read as far as "
        "it can be), with one warning per file that counts each kind of problem and says "
        "what the replay does about it; default: refuse it, naming the first problem. A "
        "repeated id is refused even so",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="read every file anew, not from the graph cache of files loaded before "
        "(CHAKRA_CACHE_DIR=off does the same; see the README)",
    )
    parser.add_argument(
        "--serialize-gpu",
        action="store_true",
        help="run all GPU work of a device on one slot (as before stream ids)",
    )
    parser.add_argument(
        "--scale",
        action="append",
        default=[],
        metavar="TARGET[@QUALIFIER...]=FACTOR",
        help="what-if: multiply durations by FACTOR (0: free, never negative). TARGET is a "
        "class: compute, comm, cpu or gpu (ops only), delay or idle (the converter's [delay] "
        "and [idle] nodes: measured time the graph does not explain, which other targets "
        "leave alone unless they name it exactly); name:TEXT, the nodes named exactly TEXT; "
        "or a shell pattern on names ('nccl*=2') in which [ and ] stand for themselves "
        "('[delay]=0' is the delay nodes). Qualifiers narrow TARGET to some instances, all "
        "of them holding: @shape:[8,16] (or 8x16; some input has this shape, * any one "
        "dimension), @shape:[[48],[8,16],[16,48],[],[]] (the whole list of input shapes), "
        "@scope:PATTERN (an enclosing op, a kernel's launching op, or a record_function or "
        "module label, is named so), @rank:0|2 or @rank:4-7; e.g. "
        "'aten::addmm@shape:[16,48]@scope:*layers.1*=2'. A rule that matches no node is an "
        "error; each reports how many nodes it matched; repeatable",
    )
    parser.add_argument(
        "--resources",
        choices=(THREADS_STREAMS, ASTRA_SIM),
        default=THREADS_STREAMS,
        help="how nodes share the hardware. threads-streams (default): each host thread "
        "and GPU stream runs its nodes in a fixed order, only data_deps order nodes, "
        "collectives replay their recorded time; astra-sim: ASTRA-sim's model, to compare "
        "with it: per rank one CPU, one GPU and one communication slot, each taking the "
        "ready node with the smallest id, data_deps and ctrl_deps both, duration_micros, "
        "and collectives, sends and receives timed by ASTRA-sim's analytical ring (see "
        "--network; ring:50:0.5 when not given, ASTRA-sim run.py's 50 GB/s and 500 ns)",
    )
    parser.add_argument(
        "--network",
        metavar="TOPOLOGY:GBPS:LATENCY_US",
        help="what-if: time collectives with an alpha-beta model, e.g. ring:100:5; with "
        "--resources astra-sim: ASTRA-sim's ring (GB/s of 2^30 bytes, latency per hop in "
        "µs), default ring:50:0.5",
    )


def _add_picture_options(parser: argparse.ArgumentParser) -> None:
    """The files drawn: ``--plot``, ``--plot-makespans``, and what ``--timeline`` shows."""
    parser.add_argument(
        "--plot",
        type=Path,
        metavar="PATH",
        help="draw the busy fraction over time of every host thread and GPU stream of each "
        "rank, simulated beside measured, all on one time axis in µs; the extension picks "
        "the format (png, svg, pdf...)",
    )
    parser.add_argument(
        "--plot-makespans",
        type=Path,
        metavar="PATH",
        help="draw each rank's makespan as bars: measured, replay, model-only (delays and "
        "idle time zeroed) and, with --scale or --network, the what-if one",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="with --timeline: add the measured schedule beside the simulated one",
    )
    parser.add_argument(
        "--timeline-segments",
        action="store_true",
        help="with --timeline: a slice per node (each segment of a host op's own time) "
        "instead of one per op",
    )


def _parsed_options(args: argparse.Namespace) -> list[ScaleRule]:
    """The ``--scale`` rules; a rule or a ``--network`` that does not parse, or a plot path
    whose extension names a format matplotlib cannot write, is a usage error (before any
    work). Checked
    here rather than while parsing: the simulator and matplotlib load after the parse."""
    from chakra.simulate import ScaleRule
    from chakra.views.plot import image_format

    rules = []
    for text in args.scale:
        try:
            rules.append(ScaleRule.parse(text))
        except ChakraError as exc:
            raise UsageError(f"argument --scale: {str(exc).removeprefix('--scale ')}") from None
    _check_network(args)
    for option, path in (("--plot", args.plot), ("--plot-makespans", args.plot_makespans)):
        if path is not None:
            try:
                image_format(path)
            except ChakraError as exc:
                raise UsageError(f"argument {option}: {exc}") from None
    return rules


def _check_network(args: argparse.Namespace) -> None:
    """A ``--network`` that does not parse, or is not a ring under ``--resources
    astra-sim``, is a usage error."""
    if not args.network:
        return
    from chakra.simulate.astra_network import AstraRing
    from chakra.simulate.network import NetworkModel

    try:
        network = NetworkModel.parse(args.network)
    except ChakraError as exc:
        option, _, problem = str(exc).partition(" ")  # "--network 'x': expected..."
        raise UsageError(f"argument {option}: {problem}") from None
    if args.resources == ASTRA_SIM:
        try:
            AstraRing.from_network(network, 1)
        except ChakraError as exc:
            raise UsageError(str(exc)) from None


def _replay(args: argparse.Namespace, rules: list[ScaleRule]) -> Replay:
    """The replay of the chosen resource model and its what-if: ``--network`` is the
    what-if's model (threads-streams) or ASTRA-sim's ring (astra-sim)."""
    from chakra.ranks.rank_read import load_agreed
    from chakra.simulate import LoadOptions, SimOptions
    from chakra.simulate.astra_network import DEFAULT_NETWORK, AstraRing
    from chakra.simulate.network import NetworkModel
    from chakra.simulate.rank_order import files_in_rank_order
    from chakra.simulate.replay import replay
    from chakra.simulate.run import load_astra_graph

    load = LoadOptions(
        serialize_gpu=args.serialize_gpu, lenient=args.lenient, cache=not args.no_cache
    )
    if args.resources != ASTRA_SIM:
        network = NetworkModel.parse(args.network) if args.network else None
        return replay(load_agreed(args.paths, load=load), rules, network)
    if args.serialize_gpu:
        raise UsageError("--serialize-gpu: ASTRA-sim's model has one GPU slot per rank")
    network = NetworkModel.parse(args.network or DEFAULT_NETWORK)
    ring = AstraRing.from_network(network, len(args.paths))
    ordered = files_in_rank_order(args.paths)  # load_agreed orders them too
    graphs = [load_astra_graph(path, rank, load) for rank, path in enumerate(ordered)]
    return replay(graphs, rules, options=SimOptions(ring=ring))


def _simulate(args: argparse.Namespace) -> None:
    from chakra.ingest.detect import TraceKind, require_kind
    from chakra.simulate.analysis import log_reference_lines

    rules = _parsed_options(args)
    prepare_outputs([args.timeline, args.plot, args.plot_makespans], args.paths)
    accepted = (TraceKind.CHAKRA_ET, TraceKind.ET_PLUS, TraceKind.HOST_ET)
    wants = "Chakra ETs (.et) or ET+ JSON, one per rank"
    each_input(args.paths, lambda path: require_kind(path, accepted, "chakra_sim", wants))
    run = _replay(args, rules)  # a rule matching nothing: no outputs
    result, what_if = run.result, run.what_if_makespans()
    log_reference_lines(result)
    if result.ring is None and not args.network:
        _hint_untimed(result)
    _write_pictures(args, run)
    counts = run.what_if.nodes_matched if run.what_if is not None else ()
    applied = [{"rule": rule.text, "nodes": count} for rule, count in zip(rules, counts)]
    if args.json:
        print(json.dumps(_document(result, what_if, applied)))
        return
    ring = result.ring
    if ring is not None:
        print(
            f"resources: astra-sim (per rank one cpu, gpu and comm slot; ring of "
            f"{ring.npus} at {ring.bandwidth_gbps:g} GB/s, {ring.latency_ns:g} ns per hop)"
        )
    for rule in applied:
        print(f"--scale {rule['rule']}: {rule['nodes']:,} nodes scaled (all ranks)")
    paths = [graph.source for graph in result.graphs]  # in rank order, not as given
    for rank, path, critical, scaled in zip(result.ranks, paths, result.critical_paths, what_if):
        _print_rank(rank, path, critical, scaled)


def _write_pictures(args: argparse.Namespace, run: Replay) -> None:
    """The ``--timeline``, ``--plot`` and ``--plot-makespans`` files asked for: all of
    them, or none."""
    from chakra.fileio import AtomicGroup, atomic_output
    from chakra.views.plot import plot_makespans, plot_utilisation
    from chakra.views.timeline import chrome_trace

    with AtomicGroup() as group:
        if args.timeline is not None:
            with atomic_output(args.timeline, text=True, group=group) as out:
                json.dump(chrome_trace(run.result, args.compare, args.timeline_segments), out)
        if args.plot is not None:
            plot_utilisation(run.result, args.plot, group)
        if args.plot_makespans is not None:
            plot_makespans(list(run.result.ranks), args.plot_makespans,
                           run.what_if_makespans(), group)  # fmt: skip


def _document(result: SimResult, what_if: list[Optional[float]], applied: list[dict]) -> dict:
    """What ``--json`` prints."""
    import msgspec

    ranks = [
        {
            **msgspec.to_builtins(rank),
            "critical_path": msgspec.to_builtins(path),
            "what_if_makespan_us": scaled,
        }
        for rank, path, scaled in zip(result.ranks, result.critical_paths, what_if)
    ]
    document = {"ranks": ranks, "scale_rules": applied}
    if result.ring is not None:
        document["resources"] = {"model": ASTRA_SIM, "network": msgspec.to_builtins(result.ring)}
    return document


def _hint_untimed(result: SimResult) -> None:
    from chakra.simulate.untimed import untimed_communication

    untimed = untimed_communication(result.graphs)
    if untimed:
        logger.warning(
            "%d collectives, sends or receives have no duration and no measured time "
            "(a generated or text workload?): replayed as free (0 us); time them with "
            "--network ring:GBPS:LATENCY_US (e.g. ring:100:5) or --resources astra-sim",
            untimed,
        )


def _print_rank(
    result: RankResult, path: str, critical: Sequence[PathEntry], scaled: Optional[float]
) -> None:
    measured = result.measured_makespan_us
    line = f"rank {result.rank} ({path}): simulated {result.simulated_makespan_us:,.0f} us"
    if measured is not None:
        line += f", measured {measured:,.0f} us, error {result.error_pct:+.2f}%"
    print(line)
    if result.model_only_makespan_us is not None:
        alone = (
            f"  model only (delays and idle time zeroed) {result.model_only_makespan_us:,.0f} us"
        )
        if result.model_only_error_pct is not None:
            alone += f", error {result.model_only_error_pct:+.2f}%"
        print(f"{alone}; unexplained on the critical path {result.unexplained_us:,.0f} us "
              f"([delay] {result.delay_us or 0:,.0f} us)")  # fmt: skip
    if scaled is not None:
        ratio = scaled / result.simulated_makespan_us if result.simulated_makespan_us else 1.0
        print(f"  what-if makespan {scaled:,.0f} us ({ratio:.3f}x the replayed one)")
    never = [use for use in result.resources if not use.busy_us and not use.unexplained_us]
    for use in result.resources:
        if use in never:  # e.g. the host ET's zero-length root thread: no row
            continue
        line = f"  {use.resource:<24} busy {use.busy_us:>12,.0f} us  {use.utilisation:6.1%}"
        if use.unexplained_us > 0:  # [idle] time: not busy, shown apart
            part = use.unexplained_us / result.simulated_makespan_us
            line += f"  unexplained {use.unexplained_us:>10,.0f} us  {part:6.1%}"
        print(line)
    if never:
        names = ", ".join(use.resource for use in never)
        print(f"  ({len(never)} never busy, left out: {names})")
    if critical:
        shown = ", ".join(f"{p.name[:40]} {p.total_us:,.0f} us" for p in critical)
        print(f"  critical path top: {shown}")


def main(argv: Optional[Sequence[str]] = None) -> None:
    sys.exit(run_tool(build_parser(), _simulate, argv, LIBRARIES))


if __name__ == "__main__":
    main()
