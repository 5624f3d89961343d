"""Conversion speed and memory: ET+ (or host ET) -> Chakra ET, nodes/s and peak RSS.

Inputs: ``param/resnet_2gpu`` (host ET, 14,392 nodes) and synthetic ET+ at 1x, 4x and 16x a
base size (``chakra.synth`` + ``chakra.link``; the 16x one holds over 1,000,000 nodes by
default), to show near-linear growth. Each conversion runs in its own process.

    python benchmarks/convert_throughput.py [--base-gpu-ops 20000] [--traces DIR]
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


def measure(source: Path, output: Path) -> dict:
    """In a child: convert one file as ``chakra_converter`` does (nodes streamed to disk)."""
    from chakra.convert import convert_file

    start = time.perf_counter()
    report = convert_file(source, output)
    return {
        "nodes": sum(report.nodes_by_type.values()),
        "total_s": time.perf_counter() - start,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_child(source: Path, output: Path) -> dict:
    command = [sys.executable, __file__, "--measure", str(source), str(output)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def report(label: str, n: dict) -> None:
    print(
        f"{label:22s} {n['nodes']:>9,d} nodes {n['total_s']:7.2f} s "
        f"{n['nodes'] / n['total_s']:>9,.0f} nodes/s  peak RSS {n['peak_rss_mib']:6.0f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--base-gpu-ops", type=int, default=20_000)
    parser.add_argument("--measure", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return
    from chakra.link import LinkOptions
    from chakra.link.batch import link_files
    from chakra.synth import SynthOptions, generate_job

    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.et"
        resnet = args.traces / "param" / "resnet_2gpu.1.1.0.host_et.json.gz"
        report("param/resnet_2gpu", run_child(resnet, out))
        for scale in (1, 4, 16):
            job = Path(folder) / f"x{scale}"
            options = SynthOptions(seed=1, ranks=1, steps=2,
                                   ops_per_step=args.base_gpu_ops * scale // 2)  # fmt: skip
            summary = generate_job(options, job)
            et_plus = job / "rank0.et_plus.json"
            link_files(summary.ranks[0].host_et, summary.ranks[0].kineto, et_plus, LinkOptions())
            for name in ("rank0.host_et.json", "rank0.kineto.json", "rank0.truth.json"):
                (job / name).unlink()
            report(f"synthetic ET+ {scale:>2d}x", run_child(et_plus, out))
            et_plus.unlink()


if __name__ == "__main__":
    main()
