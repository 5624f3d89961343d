"""Generate one synthetic rank with >= 1,000,000 GPU ops; print MB/s written and peak RSS.

Each case runs in its own process so that its peak resident set size is its own. MB/s counts
uncompressed JSON bytes (for the gzip case, the bytes before compression) per second of
generation, including the ground truth.

    python benchmarks/synth_throughput.py [--gpu-ops 1000000] [--cases plain,gzip]
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _uncompressed_size(path: Path) -> int:
    if not path.name.endswith(".gz"):
        return path.stat().st_size
    total = 0
    with gzip.open(path, "rb") as stream:
        while chunk := stream.read(1 << 24):
            total += len(chunk)
    return total


def run_case(folder: str, gpu_ops: int, compress: bool) -> dict:
    """Generate one rank in this process and measure it (the child side)."""
    from chakra.synth import SynthOptions, generate_job

    steps = 4
    options = SynthOptions(seed=1, ranks=1, steps=steps, ops_per_step=gpu_ops // steps + 50,
                           gzip=compress)  # fmt: skip
    start = time.perf_counter()
    summary = generate_job(options, folder)
    seconds = time.perf_counter() - start
    peak_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # before measuring sizes
    rank = summary.ranks[0]
    files = (rank.host_et, rank.kineto, rank.truth)
    raw = sum(_uncompressed_size(path) for path in files)
    on_disk = sum(path.stat().st_size for path in files)
    return {
        "gpu_ops": rank.gpu_ops,
        "host_ops": rank.host_ops,
        "edges": rank.edges,
        "seconds": round(seconds, 2),
        "uncompressed_mb": round(raw / 1e6, 1),
        "on_disk_mb": round(on_disk / 1e6, 1),
        "mb_per_s": round(raw / 1e6 / seconds, 1),
        "peak_rss_mib": round(peak_rss_kib / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu-ops", type=int, default=1_000_000)
    parser.add_argument("--cases", default="plain,gzip")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        folder, case = args.child
        print(json.dumps(run_case(folder, args.gpu_ops, case == "gzip")))
        return
    for case in args.cases.split(","):
        with tempfile.TemporaryDirectory(prefix="synth-bench-") as folder:
            command = [sys.executable, __file__, "--gpu-ops", str(args.gpu_ops),
                       "--child", folder, case]  # fmt: skip
            result = json.loads(subprocess.run(command, capture_output=True, text=True,
                                               check=True).stdout)  # fmt: skip
            print(f"{case:5s} " + " ".join(f"{key}={value}" for key, value in result.items()))


if __name__ == "__main__":
    main()
