"""One table of the pipeline's speed and memory, with each run's ratio to the JSON-parse floor.

For each input: the time to merely parse its JSON files with msgspec into Python objects (the
floor: no tool can read them faster), then link and convert of one rank, each in its own
process, with their peak RSS. The table has the input, its size, the floor, each stage's
time, ``x floor`` = (link + convert) / floor, and each stage's peak RSS with its ratio to the
rank's uncompressed input (host ET + Kineto; the link bound is 2x). The interpreter's own RSS
before any work (about 25 MiB, ``baseline_rss_mib`` in the JSON) is left out of the ratios.
``--output`` saves the table as JSON.

Synthetic ranks come in sizes of 1x, 4x, 16x (``--scales``) a Kineto trace of ``--kineto-mb``
(250 MB); their host ET covers the same steps (about 1.45x the Kineto size).

The floor is measured in chunks: the document's top-level values, and its big list
(``traceEvents``, ``nodes``) in groups of about 64 MB of elements, are each decoded by
``msgspec.json.decode``, timing only the decoding (plus reading the file), so that a
multi-GB trace's floor fits in memory; where the file is small enough, the one-shot decode
of the whole file is also measured (``floor_oneshot_seconds`` in the JSON) to show the two
agree.

    python benchmarks/run_all.py [--output results.json] [--traces DIR] [--scales 1 4 16]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from process_memory import current_rss_mib

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TRACES = Path(os.environ.get("CHAKRA_SHARED_TRACES", REPO.parent / "shared" / "traces"))
CHUNK_BYTES = 64 << 20
ONESHOT_LIMIT_BYTES = 1 << 30
#: Kineto bytes per (GPU op per step x step) of the synthetic generator, measured.
KINETO_BYTES_PER_OP_STEP = 1375
SYNTHETIC_OPS_PER_STEP = 45_600


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _floor_seconds(path: str) -> tuple[float, Optional[float]]:
    """Reading plus decoding ``path`` in chunks; and in one piece when it is small enough."""
    import msgspec

    from chakra.fileio import read_input

    start = time.perf_counter()
    data = read_input(path)
    seconds = time.perf_counter() - start
    oneshot = None
    if len(data) <= ONESHOT_LIMIT_BYTES:
        start = time.perf_counter()
        msgspec.json.decode(data)
        oneshot = seconds + time.perf_counter() - start
    top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    for value in top.values():
        if bytes(memoryview(value)[:1]) != b"[" or len(memoryview(value)) < CHUNK_BYTES:
            start = time.perf_counter()
            msgspec.json.decode(value)
            seconds += time.perf_counter() - start
            continue
        elements = msgspec.json.decode(value, type=list[msgspec.Raw])
        group: list[bytes] = []
        size = 0
        for index, element in enumerate(elements):
            group.append(bytes(element))
            size += len(group[-1])
            if size >= CHUNK_BYTES or index == len(elements) - 1:
                chunk = b"[" + b",".join(group) + b"]"
                group, size = [], 0
                start = time.perf_counter()
                msgspec.json.decode(chunk)
                seconds += time.perf_counter() - start
    return seconds, oneshot


def _limit_memory(gigabytes: float) -> None:
    """Cap the address space, so that a run needing more memory than the machine has stops
    with MemoryError (reported as failed) instead of waking the kernel's OOM killer."""
    if gigabytes > 0:
        limit = int(gigabytes * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def child(kind: str, paths: list[str]) -> dict[str, Any]:
    """In a child process: run one measurement; report time, peak RSS and the RSS before."""
    if kind == "floor":
        floors = [_floor_seconds(p) for p in paths]
        oneshot = [o for _, o in floors]
        return {"seconds": sum(s for s, _ in floors), "peak_rss_mib": _peak_mib(),
                "oneshot_seconds": None if None in oneshot else sum(oneshot)}  # fmt: skip
    if kind == "link":
        from chakra.link import LinkOptions
        from chakra.link.batch import link_files

        baseline = current_rss_mib()
        start = time.perf_counter()
        link_files(paths[0], paths[1], paths[2], LinkOptions())
    else:
        from chakra.convert import convert_file

        baseline = current_rss_mib()
        start = time.perf_counter()
        convert_file(paths[0], paths[1])
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_rss_mib": _peak_mib(), "baseline_rss_mib": baseline}


def _total_memory_gb() -> float:
    with open("/proc/meminfo") as meminfo:
        return int(meminfo.readline().split()[1]) / (1 << 20)


MEMORY_LIMIT_GB = 0.9 * _total_memory_gb()


def run(kind: str, paths: list[Path]) -> dict[str, Any]:
    command = [sys.executable, __file__, "--memory-limit-gb", str(MEMORY_LIMIT_GB),
               "--child", kind, *map(str, paths)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return {"failed": done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]}
    return json.loads(done.stdout)


def uncompressed_mb(paths: list[Path]) -> float:
    from chakra.fileio import read_input

    return sum(len(read_input(p)) for p in paths) / 1e6


def synthetic_rank(folder: Path, kineto_mb: float, scale: int) -> list[Path]:
    """A one-rank synthetic job whose Kineto trace is about ``scale * kineto_mb`` MB."""
    from chakra.synth import SynthOptions, generate_job

    steps = max(1, round(scale * kineto_mb * 1e6 / KINETO_BYTES_PER_OP_STEP
                         / SYNTHETIC_OPS_PER_STEP))  # fmt: skip
    options = SynthOptions(seed=1, ranks=1, steps=steps, ops_per_step=SYNTHETIC_OPS_PER_STEP)
    job = generate_job(options, folder)
    job.ranks[0].truth.unlink()
    return [job.ranks[0].host_et, job.ranks[0].kineto]


def measure(label: str, paths: list[Path], folder: Path) -> dict[str, Any]:
    """Floor, link (when there is a Kineto trace) and convert of one rank."""
    size = uncompressed_mb(paths)
    floor = run("floor", paths)
    row: dict[str, Any] = {"input": label, "size_mb": size, "floor": floor}
    et_plus = paths[0]
    if len(paths) == 2:
        et_plus = folder / "rank.et_plus.json"
        row["link"] = run("link", [*paths, et_plus])
    if "failed" not in row.get("link", {}):
        row["convert"] = run("convert", [et_plus, folder / "rank.et"])
        row["et_plus_mb"] = et_plus.stat().st_size / 1e6 if len(paths) == 2 else size
    for stale in (folder / "rank.et_plus.json", folder / "rank.et"):
        stale.unlink(missing_ok=True)
    stages = [row[s] for s in ("link", "convert") if s in row]
    if all("seconds" in s for s in stages) and "seconds" in floor:
        row["ratio_to_floor"] = sum(s["seconds"] for s in stages) / floor["seconds"]
    for stage in ("link", "convert"):
        numbers = row.get(stage, {})
        if "peak_rss_mib" in numbers:
            work = numbers["peak_rss_mib"] - numbers["baseline_rss_mib"]
            numbers["rss_to_input"] = work * 1.048576 / size
    return row


def _cell(row: dict[str, Any], stage: str, key: str, fmt: str) -> str:
    value = row.get(stage, {}).get(key)
    if "failed" in row.get(stage, {}):
        return "failed"
    return "-" if value is None else format(value, fmt)


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'input':30} {'MB':>8} {'floor s':>8} {'link s':>8} {'conv s':>8} {'x floor':>8} "
          f"{'link MiB':>9} {'link/in':>8} {'conv MiB':>9} {'conv/in':>8}")  # fmt: skip
    for r in rows:
        ratio = r.get("ratio_to_floor")
        print(f"{r['input']:30} {r['size_mb']:8.1f} {_cell(r, 'floor', 'seconds', '8.2f'):>8} "
              f"{_cell(r, 'link', 'seconds', '.2f'):>8} {_cell(r, 'convert', 'seconds', '.2f'):>8} "
              f"{'-' if ratio is None else format(ratio, '.2f'):>8} "
              f"{_cell(r, 'link', 'peak_rss_mib', '.0f'):>9} "
              f"{_cell(r, 'link', 'rss_to_input', '.2f'):>8} "
              f"{_cell(r, 'convert', 'peak_rss_mib', '.0f'):>9} "
              f"{_cell(r, 'convert', 'rss_to_input', '.2f'):>8}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--scales", type=int, nargs="*", default=[1, 4, 16],
                        help="synthetic rank sizes, in multiples of --kineto-mb")  # fmt: skip
    parser.add_argument("--kineto-mb", type=float, default=250.0)
    parser.add_argument("--workdir", type=Path, help="where synthetic traces go (default: tmp)")
    parser.add_argument("--output", type=Path, help="save the table as JSON")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--memory-limit-gb", type=float, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _limit_memory(args.memory_limit_gb)
        print(json.dumps(child(args.child[0], args.child[1:])))
        return
    param = args.traces / "param"
    cases = [
        ("param/linear", [param / "linear.host_et.json.gz", param / "linear.kineto.json.gz"]),
        ("param/resnet_2gpu (host ET)", [param / "resnet_2gpu.1.1.0.host_et.json.gz"]),
    ]
    rows = []
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=args.workdir))
    try:
        for label, paths in cases:
            rows.append(measure(label, paths, folder))
        for scale in args.scales:
            rank = folder / f"synthetic{scale}"
            paths = synthetic_rank(rank, args.kineto_mb, scale)
            rows.append(measure(f"synthetic {scale}x {args.kineto_mb:.0f} MB Kineto", paths, rank))
            shutil.rmtree(rank)
            print(f"done: {rows[-1]['input']}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print_table(rows)
    if args.output:
        args.output.write_text(json.dumps({"rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
