"""Feeder speed and memory on a 2,000,000-node synthetic ET, fed to the end in a child process.

The graph is a chain (node i depends on i - 1) plus, for about half the nodes, a dependency
on a node 2 to 64 positions back. It is written by a generator (never a list) to a temporary
file; each window size is fed in its own process through the typical loop (get next issuable,
free its children, remove it), which reports nodes/s and its peak RSS next to the RSS it had
before feeding, so memory growth with the file (there should be none) shows.

    python benchmarks/feeder_throughput.py [--nodes 2000000] [--windows 4096 65536 1048576] [--gzip]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def synthetic_nodes(count: int, seed: int = 0) -> Iterator[Any]:
    from chakra.et import AttributeProto, Node, NodeType

    rng = random.Random(seed)
    for node_id in range(count):
        node = Node(id=node_id, name="op", type=NodeType.COMP_NODE, duration_micros=5)
        if node_id:
            node.data_deps.append(node_id - 1)
        if node_id >= 64 and rng.random() < 0.5:
            node.data_deps.append(node_id - rng.randint(2, 64))
        node.attr.append(AttributeProto(name="is_cpu_op", bool_val=True))
        yield node


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def feed(path: str, window: int) -> dict:
    from chakra.feeder import EtFeeder

    before = rss_mib()
    start = time.perf_counter()
    issued = most_loaded = 0
    with EtFeeder(path, window_size=window) as feeder:
        while feeder.has_nodes_to_issue():
            node = feeder.get_next_issuable_node()
            if node is None:
                raise RuntimeError("feeder stalled")
            node_id = node.id
            feeder.free_children_nodes(node_id)
            most_loaded = max(most_loaded, feeder.loaded_count)
            feeder.remove_node(node_id)
            issued += 1
    seconds = time.perf_counter() - start
    return {"window": window, "issued": issued, "seconds": round(seconds, 2),
            "nodes_per_s": round(issued / seconds), "most_loaded": most_loaded,
            "rss_before_mib": round(before, 1), "peak_rss_mib": round(rss_mib(), 1)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2_000_000)
    parser.add_argument("--windows", type=int, nargs="+", default=[4096, 65_536, 1 << 20])
    parser.add_argument("--gzip", action="store_true", help="write the ET gzip-compressed")
    parser.add_argument("--feed", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.feed:
        print(json.dumps(feed(args.feed[0], int(args.feed[1]))))
        return
    from chakra.et import GlobalMetadata, write_et

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("synthetic.et.gz" if args.gzip else "synthetic.et")
        start = time.perf_counter()
        write_et(path, GlobalMetadata(version="1.0.0"), synthetic_nodes(args.nodes))
        size_mib = path.stat().st_size / 2**20
        seconds = time.perf_counter() - start
        print(f"wrote {args.nodes:,} nodes, {size_mib:.1f} MiB in {seconds:.1f} s "
              f"(writer peak RSS {rss_mib():.0f} MiB)")  # fmt: skip
        for window in args.windows:
            child = [sys.executable, __file__, "--feed", str(path), str(window)]
            result = json.loads(subprocess.run(child, check=True, capture_output=True).stdout)
            print(json.dumps(result))


if __name__ == "__main__":
    main()
