"""Linking speed and memory: load + link + write ET+, on param/linear and on synthetic pairs.

Synthetic pairs come from ``chakra.synth`` at 1x, 4x and 16x a base size (the 16x pair holds
over 1,000,000 Kineto events by default), to show that time grows linearly with the input.
Each measurement runs in a child process so its peak RSS is its own.

    python benchmarks/link_throughput.py [--base-gpu-ops 16000] [--traces DIR]
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


def measure(host: Path, device: Path, output: Path) -> dict:
    """In a child: time each phase of linking one rank."""
    from chakra.ingest import load_device_trace, load_host_trace
    from chakra.link import LinkOptions, link_traces
    from chakra.link.et_plus import write_et_plus

    clock = time.perf_counter
    t0 = clock()
    host_trace = load_host_trace(host)
    t1 = clock()
    device_trace = load_device_trace(device)
    t2 = clock()
    linked = link_traces(host_trace, device_trace, LinkOptions())
    t3 = clock()
    write_et_plus(linked, output)
    t4 = clock()
    return {
        "events": sum(n for _, n in device_trace.category_counts),
        "host_ops": len(host_trace.ops),
        "gpu_nodes": len(linked.gpu_nodes),
        "load_host_s": t1 - t0,
        "load_device_s": t2 - t1,
        "link_s": t3 - t2,
        "write_s": t4 - t3,
        "total_s": t4 - t0,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_child(host: Path, device: Path, output: Path) -> dict:
    command = [sys.executable, __file__, "--measure", str(host), str(device), str(output)]
    return json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


def report(label: str, n: dict) -> None:
    rate = n["events"] / n["total_s"]
    print(
        f"{label:24s} {n['events']:>9,d} events {n['total_s']:7.2f} s {rate:>10,.0f} events/s"
        f"  (load {n['load_host_s'] + n['load_device_s']:.2f}, link {n['link_s']:.2f},"
        f" write {n['write_s']:.2f})  peak RSS {n['peak_rss_mib']:6.0f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--base-gpu-ops", type=int, default=16_000)
    parser.add_argument("--measure", nargs=3, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return
    from chakra.synth import SynthOptions, generate_job

    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.et_plus.json"
        param = args.traces / "param"
        report("param/linear", run_child(param / "linear.host_et.json.gz",
                                         param / "linear.kineto.json.gz", out))  # fmt: skip
        for scale in (1, 4, 16):
            job = Path(folder) / f"x{scale}"
            ops_per_step = args.base_gpu_ops * scale // 2
            generate_job(SynthOptions(seed=1, ranks=1, steps=2, ops_per_step=ops_per_step), job)
            numbers = run_child(job / "rank0.host_et.json", job / "rank0.kineto.json", out)
            report(f"synthetic {scale:>2d}x", numbers)


if __name__ == "__main__":
    main()
