"""Loading throughput of the host ET and Kineto loaders: MB/s of JSON and peak RSS.

Each measurement runs in its own process so that its peak RSS is its own; MB/s counts the
uncompressed JSON bytes (gzip inflation included in the time). For Kineto traces, "kept" is
the RSS that the loaded trace holds, against the uncompressed file's size. The stdlib
``json.loads`` of the same bytes is printed for comparison. Inputs: the shared real traces,
and two synthetic Kineto traces of about ``--synthetic-mb`` MB: one replicating the events
of ``param/linear.kineto.json.gz`` with shifted timestamps and ids, one written by
``chakra.synth`` (multi-stream transformer step).

    python benchmarks/ingest_throughput.py [--synthetic-mb 500] [--traces DIR]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec
from process_memory import current_rss_mib

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TRACES = Path(os.environ.get("CHAKRA_SHARED_TRACES", REPO.parent / "shared" / "traces"))


def measure(kind: str, path: Path) -> dict:
    """Run in a child: load ``path`` with the loader ``kind`` and report time and peak RSS."""
    from chakra.fileio import read_input
    from chakra.ingest import load_device_trace, load_host_trace

    size = len(read_input(path)) if kind == "host" else 0
    before = current_rss_mib()
    start = time.perf_counter()
    retained = None
    if kind == "host":
        count = len(load_host_trace(path).ops)
        seconds = time.perf_counter() - start
    elif kind == "kineto":
        trace = load_device_trace(path)
        seconds = time.perf_counter() - start
        count = sum(n for _, n in trace.category_counts)
        retained = current_rss_mib() - before  # what the loaded trace keeps
        size = len(read_input(path))  # read after: a read before would shape the heap
    else:
        data = read_input(path)
        size = len(data)
        start = time.perf_counter()
        count = len(json.loads(data))
        seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"bytes": size, "seconds": seconds, "items": count, "peak_rss_mib": peak,
            "retained_rss_mib": retained}  # fmt: skip


def run_child(kind: str, path: Path) -> dict:
    command = [sys.executable, __file__, "--measure", kind, str(path)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def make_synthetic_kineto(source: Path, target: Path, megabytes: int) -> None:
    """Replicate ``source``'s events, shifted in time and ids, until ``target`` holds
    about ``megabytes`` MB of JSON. Streams: memory stays at one copy of the source."""
    with gzip.open(source) as f:
        document = json.load(f)
    events = document.pop("traceEvents")
    span = max(e.get("ts", 0) + e.get("dur", 0) for e in events) - min(
        e.get("ts", 0) for e in events if "ts" in e
    )
    encoder = msgspec.json.Encoder()
    written, copy = 0, 0
    with open(target, "wb") as out:
        out.write(b'{"schemaVersion": 1, "traceEvents": [\n')
        while written < megabytes * 1_000_000:
            shift, id_shift = copy * (span + 1000), copy * 10_000_000
            chunk = []
            for event in events:
                shifted = dict(event, ts=event["ts"] + shift) if "ts" in event else dict(event)
                args = shifted.get("args")
                if args:
                    shifted["args"] = {
                        k: v + id_shift if k in ("External id", "correlation") else v
                        for k, v in args.items()
                    }
                if "id" in shifted and isinstance(shifted["id"], int):
                    shifted["id"] += id_shift
                chunk.append(encoder.encode(shifted))
            data = (b",\n" if copy else b"") + b",\n".join(chunk)
            out.write(data)
            written += len(data)
            copy += 1
        out.write(b"\n]}\n")


def make_generated_kineto(folder: Path, megabytes: int) -> Path:
    """A one-rank ``chakra.synth`` Kineto trace of about ``megabytes`` MB."""
    from chakra.synth import SynthOptions, generate_job

    ops_per_step = max(100, megabytes * 1_000_000 // 1500 // 2)  # ~1.5 kB of Kineto per GPU op
    summary = generate_job(
        SynthOptions(seed=1, ranks=1, steps=2, ops_per_step=ops_per_step), folder
    )
    return summary.ranks[0].kineto


def report(label: str, numbers: dict) -> None:
    megabytes = numbers["bytes"] / 1e6
    retained = numbers.get("retained_rss_mib")
    kept = ""
    if retained is not None:
        ratio = retained * 2**20 / max(numbers["bytes"], 1)
        kept = f"  kept {retained:6.0f} MiB ({ratio:.2f}x file)"
    print(
        f"{label:44s} {megabytes:8.1f} MB {numbers['seconds']:7.2f} s "
        f"{megabytes / numbers['seconds']:7.0f} MB/s  peak RSS {numbers['peak_rss_mib']:7.0f} MiB"
        + kept
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--synthetic-mb", type=int, default=500)
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], Path(args.measure[1]))))
        return
    cases = [
        ("host", args.traces / "param" / "linear.host_et.json.gz"),
        ("host", args.traces / "param" / "resnet_2gpu.1.1.0.host_et.json.gz"),
        ("kineto", args.traces / "param" / "linear.kineto.json.gz"),
        ("kineto", args.traces / "hta" / "nccl_data.kineto.json.gz"),
    ]
    for kind, path in cases:
        report(f"{kind:6s} {path.name}", run_child(kind, path))
        report(f"  (stdlib json.loads of {path.name})", run_child("json", path))
    with tempfile.TemporaryDirectory() as folder:
        synthetic = Path(folder) / "synthetic.kineto.json"
        make_synthetic_kineto(cases[2][1], synthetic, args.synthetic_mb)
        report("kineto synthetic, replicated linear", run_child("kineto", synthetic))
        report("  (stdlib json.loads of the same)", run_child("json", synthetic))
        synthetic.unlink()
        generated = make_generated_kineto(Path(folder), args.synthetic_mb)
        report("kineto synthetic, chakra.synth", run_child("kineto", generated))
        report("  (stdlib json.loads of the same)", run_child("json", generated))


if __name__ == "__main__":
    main()
