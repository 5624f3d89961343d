"""One table of the pipeline's speed and memory, with each run's ratio to the JSON-parse floor.

For each input: the time to merely parse its JSON files with msgspec (the floor: no tool can
read them faster), then link + convert (and simulate) of one rank, each in its own process.
The table has tool, input, size, time, throughput, peak RSS and time / floor; ``--output``
saves it as JSON so that runs can be compared.

    python benchmarks/run_all.py [--output results.json] [--traces DIR] [--synthetic-ops N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TRACES = Path(os.environ.get("CHAKRA_SHARED_TRACES", REPO.parent / "shared" / "traces"))


def child(kind: str, paths: list[str]) -> dict:
    """In a child process: run one measurement and report its time and peak RSS."""
    import msgspec

    from chakra.fileio import read_input

    start = time.perf_counter()
    if kind == "parse":
        for path in paths:
            msgspec.json.decode(read_input(path))
    elif kind == "link+convert":
        from chakra.convert import convert_file
        from chakra.link import LinkOptions
        from chakra.link.batch import link_files

        folder = Path(tempfile.mkdtemp())
        link_files(paths[0], paths[1], folder / "et_plus.json", LinkOptions())
        convert_file(folder / "et_plus.json", folder / "rank.et")
    elif kind == "convert":
        from chakra.convert import convert_file

        convert_file(paths[0], Path(tempfile.mkdtemp()) / "rank.et")
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": seconds, "peak_rss_mib": peak}


def run(kind: str, paths: list[Path]) -> dict:
    command = [sys.executable, __file__, "--child", kind, *map(str, paths)]
    return json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


def uncompressed_mb(paths: list[Path]) -> float:
    from chakra.fileio import read_input

    return sum(len(read_input(p)) for p in paths) / 1e6


def cases(traces: Path, folder: Path, synthetic_ops: int) -> list[tuple[str, str, list[Path]]]:
    from chakra.synth import SynthOptions, generate_job

    job = generate_job(SynthOptions(seed=1, ranks=1, ops_per_step=synthetic_ops), folder)
    synthetic = [job.ranks[0].host_et, job.ranks[0].kineto]
    return [
        ("link+convert", "param/linear", [traces / "param" / "linear.host_et.json.gz",
                                          traces / "param" / "linear.kineto.json.gz"]),
        ("convert", "param/resnet_2gpu (host ET)",
         [traces / "param" / "resnet_2gpu.1.1.0.host_et.json.gz"]),
        ("link+convert", f"synthetic ({synthetic_ops} GPU ops/step)", synthetic),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--synthetic-ops", type=int, default=20_000)
    parser.add_argument("--output", type=Path, help="save the table as JSON")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1:])))
        return
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for tool, label, paths in cases(args.traces, Path(folder), args.synthetic_ops):
            size = uncompressed_mb(paths)
            floor = run("parse", paths)
            numbers = run(tool, paths)
            rows.append({"tool": tool, "input": label, "size_mb": size, **numbers,
                         "mb_per_s": size / numbers["seconds"],
                         "floor_seconds": floor["seconds"],
                         "ratio_to_floor": numbers["seconds"] / floor["seconds"],
                         "rss_to_input": numbers["peak_rss_mib"] * 1.048576 / size})  # fmt: skip
    print(f"{'tool':13} {'input':32} {'MB':>7} {'s':>7} {'MB/s':>7} {'peak MiB':>9} "
          f"{'x floor':>8} {'RSS/input':>9}")  # fmt: skip
    for r in rows:
        print(f"{r['tool']:13} {r['input']:32} {r['size_mb']:7.1f} {r['seconds']:7.2f} "
              f"{r['mb_per_s']:7.1f} {r['peak_rss_mib']:9.0f} {r['ratio_to_floor']:8.1f} "
              f"{r['rss_to_input']:9.1f}")  # fmt: skip
    if args.output:
        args.output.write_text(json.dumps({"rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
