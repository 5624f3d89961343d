"""Write, then stream, a large Chakra ET; print nodes/s and peak RSS of each phase.

Each phase runs in its own process so that its peak resident set size is its own. Nodes look
like converted GPU/CPU ops: a name, a type, one or two data deps, a duration and three attrs.

    python benchmarks/et_io.py [--nodes 1000000] [--gzip]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def synthetic_nodes(count: int) -> Iterator[Any]:
    from chakra.et import Node, NodeType, set_attr

    for node_id in range(count):
        node = Node(
            id=node_id,
            name=f"aten::linear_{node_id % 97}",
            type=NodeType.COMP_NODE,
            duration_micros=node_id % 1000,
        )
        if node_id:
            node.data_deps.append(node_id - 1)
        if node_id > 10:
            node.data_deps.append(node_id - 10)
        set_attr(node, "is_cpu_op", node_id % 3 == 0)
        set_attr(node, "stream", 7 + node_id % 3)
        set_attr(node, "rf_id", node_id)
        yield node


def phase_write(path: Path, count: int) -> dict:
    """Time the writer alone; building the nodes is reported apart."""
    from chakra.et import EtWriter, GlobalMetadata

    clock = time.perf_counter
    start = clock()
    in_writer = 0.0
    with EtWriter(path, GlobalMetadata(version="0.0.4")) as writer:
        for node in synthetic_nodes(count):
            before = clock()
            writer.write(node)
            in_writer += clock() - before
        before = clock()
    in_writer += clock() - before  # closing: flush and rename
    total = clock() - start
    return {"nodes": writer.nodes_written, "seconds": in_writer, "build_seconds": total - in_writer}


def phase_read(path: Path, count: int) -> dict:
    from chakra.et import EtReader

    start = time.perf_counter()
    total_deps = 0
    with EtReader(path) as reader:
        for node in reader:
            total_deps += len(node.data_deps)
        read = reader.nodes_read
    assert read == count, (read, count)
    return {"nodes": read, "seconds": time.perf_counter() - start, "deps": total_deps}


PHASES = {"write": phase_write, "read": phase_read}


def run_phase(phase: str, path: Path, count: int) -> dict:
    """Run one phase in a child process; return its numbers plus its peak RSS."""
    result = subprocess.run(
        [sys.executable, __file__, "--phase", phase, "--path", str(path), "--nodes", str(count)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--gzip", action="store_true", help="write and read a .et.gz")
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        numbers = PHASES[args.phase](args.path, args.nodes)
        numbers["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(numbers))
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("bench.et.gz" if args.gzip else "bench.et")
        for phase in ("write", "read"):
            numbers = run_phase(phase, path, args.nodes)
            rate = numbers["nodes"] / numbers["seconds"]
            print(
                f"{phase:5s} {numbers['nodes']:>9,d} nodes  {numbers['seconds']:6.2f} s  "
                f"{rate:>10,.0f} nodes/s  peak RSS {numbers['peak_rss_mib']:6.1f} MiB"
            )
            if "build_seconds" in numbers:
                build = numbers["build_seconds"]
                print(f"      (building the nodes with set_attr took {build:.2f} s more)")
        size_mib = path.stat().st_size / 2**20
        print(f"file  {path.name}: {size_mib:.1f} MiB")


if __name__ == "__main__":
    main()
