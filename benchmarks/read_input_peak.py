"""Reading a whole trace into memory (``chakra.fileio.read_input``): time and the rise in
peak resident memory (VmHWM), as a multiple of the decompressed size, for a gzip file and
for the same file uncompressed. Each read runs in a fresh process.

Without ``FILE``, a synthetic host ET of one rank (about 240 MB with the default 60,000 ops
per step) is generated and gzipped in a temporary folder.

    python benchmarks/read_input_peak.py [FILE.json.gz] [--ops-per-step 60000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import json, sys, time
from chakra.fileio import read_input

def peak():
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("VmHWM")) * 1024

before = peak()
start = time.perf_counter()
data = read_input(sys.argv[1])
seconds = time.perf_counter() - start
print(json.dumps({"bytes": len(data), "seconds": seconds, "peak_rise": peak() - before}))
"""


def measure(path: Path, repeat: int) -> dict:
    """The fastest of ``repeat`` reads, each in a fresh process."""
    command = [sys.executable, "-c", CHILD, str(path)]
    runs = []
    for _ in range(repeat):
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        runs.append(json.loads(done.stdout))
    return min(runs, key=lambda run: run["seconds"])


def synthetic(folder: Path, ops_per_step: int) -> Path:
    from chakra.synth import SynthOptions, generate_job

    generate_job(SynthOptions(seed=1, ranks=1, ops_per_step=ops_per_step), folder)
    plain = folder / "rank0.host_et.json"
    packed = folder / "rank0.host_et.json.gz"
    with plain.open("rb") as source, gzip.open(packed, "wb", compresslevel=6) as target:
        shutil.copyfileobj(source, target, 1 << 20)
    return packed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, help="a gzip trace (default: synthetic)")
    parser.add_argument("--ops-per-step", type=int, default=60000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        packed = args.file or synthetic(Path(scratch), args.ops_per_step)
        plain = Path(scratch) / "plain.json"
        with gzip.open(packed, "rb") as source, plain.open("wb") as target:
            shutil.copyfileobj(source, target, 1 << 20)
        for label, path in (("gzip", packed), ("plain", plain)):
            run = measure(path, args.repeat)
            print(f"{label:5}  {run['bytes'] / 1e6:8.1f} MB  {run['seconds']:6.3f} s  "
                  f"peak rise {run['peak_rise'] / run['bytes']:.2f}x the content")  # fmt: skip


if __name__ == "__main__":
    main()
