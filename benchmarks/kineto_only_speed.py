"""Kineto-only link + convert against the JSON parse floor of the Kineto file.

The issue's bar: Kineto-only link + convert (no host ET) within 1.5x the JSON parse floor of
the Kineto file, linear in the number of events. For one-rank synthetic Kineto traces of
several sizes (``chakra.synth``, plain JSON, ``--steps`` steps of ``--base-ops-per-step``
times each of ``--scales`` GPU ops), each measurement runs in a fresh process, ``--repeats``
times (the median is printed):

- **the JSON parse floor**: ``json.loads`` (stdlib) of the file's bytes, already in memory
  (the read is not timed). ``msgspec.json.decode`` of the same bytes is printed beside it:
  a faster decoder, so a stricter floor.
- **Kineto-only link + convert**: ``load_device_trace`` -> ``host_trace_from_kineto`` ->
  ``link_traces`` -> ``as_et_plus`` -> ``convert_et_plus`` -> ``write_et`` of the ``.et``,
  each stage timed (load includes reading the file), with the resident memory after each
  stage and the process's peak RSS (``RSS/in``: peak less the interpreter's RSS before the
  chain, over the Kineto file's size).

- **the tools' path**: ``link_files`` to an ET+ file, then ``convert_file`` of it (what
  ``chakra_pipeline`` and ``chakra_trace_link --device-trace`` + ``chakra_converter`` do),
  printed as ``tools s`` and ``x floor`` of it.

Then ``x floor`` = (link + convert) / the JSON parse floor (and the same against msgspec),
us per Kineto event, and, for linearity, the per-event cost of the largest size over the
smallest. ``--profile`` runs the chain of the largest size once more under cProfile and
prints its top functions by cumulative and by own time. ``--output`` saves the rows as JSON.

    python benchmarks/kineto_only_speed.py [--scales 1 3 8] [--base-ops-per-step 5000]
        [--steps 2] [--repeats 3] [--profile] [--output FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from process_memory import current_rss_mib

#: The stages of the chain, in order (each one's seconds is ``<stage>_s`` in a chain row).
STAGES = ("load", "host_from_kineto", "link", "as_et_plus", "convert", "write")
#: The bar the issue sets: (link + convert) / the JSON parse floor.
TARGET_RATIO = 1.5


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def floor_seconds(kineto: Path, decoder: str) -> dict[str, float]:
    """In a child: decode the file's bytes once with ``json`` or ``msgspec``."""
    data = kineto.read_bytes()
    if decoder == "msgspec":
        import msgspec

        start = time.perf_counter()
        msgspec.json.decode(data)
    else:
        start = time.perf_counter()
        json.loads(data)
    return {"seconds": time.perf_counter() - start, "peak_rss_mib": _peak_rss_mib()}


def chain_seconds(kineto: Path, output: Path) -> dict[str, Any]:
    """In a child: the Kineto-only chain in memory, one stage at a time."""
    import logging

    from chakra.convert import ConvertOptions, convert_et_plus
    from chakra.et.writer import write_et
    from chakra.ingest import load_device_trace
    from chakra.ingest.kineto_host import host_trace_from_kineto
    from chakra.link import LinkOptions, link_traces
    from chakra.link.et_plus import as_et_plus

    logging.disable(logging.WARNING)  # the synthetic traces' expected warnings: not timed
    baseline = current_rss_mib()
    clock = time.perf_counter
    times, rss = [clock()], []

    def lap() -> None:
        times.append(clock())
        rss.append(current_rss_mib())

    device = load_device_trace(kineto)
    lap()
    host = host_trace_from_kineto(device)
    lap()
    linked = link_traces(host, device, LinkOptions())
    lap()
    et_plus = as_et_plus(linked)
    lap()
    graph = convert_et_plus(et_plus, ConvertOptions(rank=0))
    lap()
    nodes = write_et(output, graph.metadata, graph.nodes)
    lap()
    row: dict[str, Any] = {f"{s}_s": b - a for s, a, b in zip(STAGES, times, times[1:])}
    row.update({f"{s}_rss_mib": mib for s, mib in zip(STAGES, rss)})
    row.update(
        events=sum(n for _, n in device.category_counts),
        host_ops=len(host.ops),
        et_nodes=nodes,
        seconds=times[-1] - times[0],
        peak_rss_mib=_peak_rss_mib(),
        baseline_rss_mib=baseline,
    )
    return row


def tools_seconds(kineto: Path, output: Path) -> dict[str, Any]:
    """In a child: the path the tools take (``chakra_pipeline``, ``chakra_trace_link
    --device-trace`` then ``chakra_converter``): link to an ET+ file, convert that file
    (read back as an outline, the ``.et`` streamed out), every step."""
    import logging

    from chakra.convert import ConvertOptions, convert_file
    from chakra.link import LinkOptions
    from chakra.link.batch import link_files

    logging.disable(logging.WARNING)
    baseline = current_rss_mib()
    et_plus = output.with_suffix(".et_plus.json")
    start = time.perf_counter()
    link_files(None, kineto, et_plus, LinkOptions(profiler_step="all"))
    linked = time.perf_counter()
    convert_file(et_plus, output, ConvertOptions(rank=0))
    done = time.perf_counter()
    et_plus.unlink()
    return {"link_s": linked - start, "convert_s": done - linked, "seconds": done - start,
            "peak_rss_mib": _peak_rss_mib(), "baseline_rss_mib": baseline}  # fmt: skip


def profile_chain(kineto: Path, output: Path, top: int) -> None:
    """In a child: the chain under cProfile; its top functions by cumulative and own time."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.runcall(chain_seconds, kineto, output)
    for order in ("cumulative", "tottime"):
        print(f"--- top {top} by {order} time ---")
        pstats.Stats(profiler).sort_stats(order).print_stats(top)


def run_child(*arguments: str) -> Any:
    """One measurement in a fresh interpreter (its own peak RSS, no warm caches)."""
    command = [sys.executable, __file__, "--child", *arguments]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(arguments)}: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(done.stdout)


def _median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each number's median over the repeats (per key, so the stages need not add up)."""
    return {key: statistics.median(r[key] for r in rows) for key in rows[0]}


def measure_size(kineto: Path, output: Path, repeats: int) -> dict[str, Any]:
    """The two floors and the chain of one Kineto file, medians of ``repeats`` runs each."""
    row: dict[str, Any] = {"kineto_mb": kineto.stat().st_size / 1e6}
    for decoder in ("json", "msgspec"):
        runs = [run_child("floor", str(kineto), decoder) for _ in range(repeats)]
        row[f"{decoder}_floor"] = _median_row(runs)
    row["chain"] = _median_row([run_child("chain", str(kineto), str(output))
                                for _ in range(repeats)])  # fmt: skip
    row["tools"] = _median_row([run_child("tools", str(kineto), str(output))
                                for _ in range(repeats)])  # fmt: skip
    row["tools_ratio_to_json_floor"] = row["tools"]["seconds"] / row["json_floor"]["seconds"]
    chain, floor = row["chain"], row["json_floor"]["seconds"]
    row["ratio_to_json_floor"] = chain["seconds"] / floor
    row["ratio_to_msgspec_floor"] = chain["seconds"] / row["msgspec_floor"]["seconds"]
    row["chain_us_per_event"] = chain["seconds"] / chain["events"] * 1e6
    row["floor_us_per_event"] = floor / chain["events"] * 1e6
    work_mb = (chain["peak_rss_mib"] - chain["baseline_rss_mib"]) * 1.048576
    row["rss_to_input"] = work_mb / row["kineto_mb"]
    return row


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'events':>9} {'MB':>7} {'json s':>7} {'msgspec':>7} {'chain s':>8} "
          f"{'x floor':>8} {'x msgsp':>8} {'us/ev':>6} {'floor us/ev':>11} {'peak MiB':>9} "
          f"{'RSS/in':>7}")  # fmt: skip
    for r in rows:
        c = r["chain"]
        print(f"{c['events']:>9,.0f} {r['kineto_mb']:7.1f} {r['json_floor']['seconds']:7.2f} "
              f"{r['msgspec_floor']['seconds']:7.2f} {c['seconds']:8.2f} "
              f"{r['ratio_to_json_floor']:8.2f} {r['ratio_to_msgspec_floor']:8.2f} "
              f"{r['chain_us_per_event']:6.2f} {r['floor_us_per_event']:11.2f} "
              f"{c['peak_rss_mib']:9.0f} {r['rss_to_input']:7.2f}")  # fmt: skip
    print("\nthe tools' path (link to an ET+ file, convert that file):")
    print(f"{'events':>9} {'link s':>7} {'convert s':>9} {'tools s':>8} {'x floor':>8} "
          f"{'peak MiB':>9}")  # fmt: skip
    for r in rows:
        t = r["tools"]
        print(f"{r['chain']['events']:>9,.0f} {t['link_s']:7.2f} {t['convert_s']:9.2f} "
              f"{t['seconds']:8.2f} {r['tools_ratio_to_json_floor']:8.2f} "
              f"{t['peak_rss_mib']:9.0f}")  # fmt: skip
    print("\nseconds per stage (median of each; share of the chain):")
    print(f"{'events':>9} " + " ".join(f"{s:>18}" for s in STAGES))
    for r in rows:
        c = r["chain"]
        cells = (f"{c[s + '_s']:7.2f} ({c[s + '_s'] / c['seconds']:4.0%})" for s in STAGES)
        print(f"{c['events']:>9,.0f} " + " ".join(f"{cell:>18}" for cell in cells))
    print("\nresident MiB after each stage (everything built so far is still held):")
    print(f"{'events':>9} " + " ".join(f"{s:>18}" for s in STAGES))
    for r in rows:
        c = r["chain"]
        print(f"{c['events']:>9,.0f} " + " ".join(f"{c[s + '_rss_mib']:>18.0f}" for s in STAGES))
    small, large = rows[0], rows[-1]
    growth = large["chain_us_per_event"] / small["chain_us_per_event"]
    floor_growth = large["floor_us_per_event"] / small["floor_us_per_event"]
    worst = max(r["ratio_to_json_floor"] for r in rows)
    print(f"\nlinearity: us per event, largest / smallest = {growth:.2f} "
          f"(the JSON parse floor's: {floor_growth:.2f}; 1.00 is linear)")  # fmt: skip
    verdict = "holds" if worst <= TARGET_RATIO else "does not hold"
    print(f"target: link + convert <= {TARGET_RATIO}x the JSON parse floor: {verdict} "
          f"(worst {worst:.2f}x)")  # fmt: skip


def kineto_trace(folder: Path, ops_per_step: int, steps: int) -> Path:
    """A one-rank synthetic job's Kineto trace (its host ET and truth are deleted)."""
    from chakra.synth import SynthOptions, generate_job

    job = generate_job(SynthOptions(seed=1, ranks=1, steps=steps, ops_per_step=ops_per_step),
                       folder)  # fmt: skip
    job.ranks[0].host_et.unlink()
    job.ranks[0].truth.unlink()
    return job.ranks[0].kineto


def child_main(arguments: list[str]) -> None:
    kind, kineto, extra = arguments[0], Path(arguments[1]), arguments[2:]
    if kind == "floor":
        print(json.dumps(floor_seconds(kineto, extra[0])))
    elif kind == "chain":
        print(json.dumps(chain_seconds(kineto, Path(extra[0]))))
    elif kind == "tools":
        print(json.dumps(tools_seconds(kineto, Path(extra[0]))))
    else:
        profile_chain(kineto, Path(extra[0]), int(extra[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 3, 8],
                        help="trace sizes, in multiples of --base-ops-per-step")  # fmt: skip
    parser.add_argument("--base-ops-per-step", type=int, default=5_000)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="cProfile the largest size")
    parser.add_argument("--profile-top", type=int, default=25)
    parser.add_argument("--workdir", type=Path, help="where the traces go (default: tmp)")
    parser.add_argument("--output", type=Path, help="save the rows as JSON")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args.child)
        return
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
    rows = []
    with tempfile.TemporaryDirectory(dir=args.workdir) as folder:
        output = Path(folder) / "rank0.et"
        for scale in sorted(args.scales):
            job = Path(folder) / f"x{scale}"
            kineto = kineto_trace(job, args.base_ops_per_step * scale, args.steps)
            rows.append({"scale": scale, **measure_size(kineto, output, args.repeats)})
            print(f"done: {scale}x", file=sys.stderr, flush=True)
            if args.profile and scale == max(args.scales):
                command = [sys.executable, __file__, "--child", "profile", str(kineto),
                           str(output), str(args.profile_top)]  # fmt: skip
                profile = subprocess.run(command, capture_output=True, text=True, check=True)
            for path in job.iterdir():
                path.unlink()
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    print_table(rows)
    if args.profile:
        print(f"\ncProfile of the largest size ({rows[-1]['chain']['events']:,.0f} events):")
        print(profile.stdout)
    if args.output:
        args.output.write_text(json.dumps({"rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
