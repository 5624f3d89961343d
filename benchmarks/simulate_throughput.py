"""Simulation speed and memory on synthetic graphs of 10^4 to 10^6 nodes, and 4 ranks x 10^6.

Each graph is shaped like a converted training step: two host threads whose ops chain in
program order, each op launching a GPU op on one of three streams (stream order plus
occasional cross-stream waits), and a collective on pg "0" every 500 nodes. Each size runs
in its own process: building the simulator's arrays from the nodes in memory, reading and
building them again from ``.et`` files (written to a temporary folder, untimed) with the
checks ``chakra_sim`` makes as it loads a file (:mod:`chakra.simulate.load_checks`), and
running the engine (``Engine(graphs)`` and ``run()``) are timed apart; the second line of
each case gives the two build rates, by the clock and per second of the process's CPU time
(steadier on a busy machine).

    python benchmarks/simulate_throughput.py [--sizes 10000 100000 1000000] [--ranks 4]

``--cli`` times ``chakra_sim`` as a whole process on one ``.et`` of the last size instead,
read included, interleaved: this tree with ``--no-cache``, with an empty graph cache (cold:
it hashes the file and stores the graph), with a filled one (warm), and, with
``--baseline-python``, another checkout's interpreter (e.g. main's venv); medians and
spreads (min-max) of ``--repeats`` runs each, wall and CPU, and whether every run printed
the same.

    python benchmarks/simulate_throughput.py --cli --sizes 1000000 \
        --baseline-python ../main/.venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional


def synthetic_nodes(count: int, seed: int) -> list[Any]:
    from chakra.et import AttributeProto, Node, NodeType

    rng = random.Random(seed)
    nodes, last_cpu, last_gpu = [], {1: None, 2: None}, {7: None, 8: None, 9: None}
    node_id = 0
    while node_id < count:
        tid = 1 if rng.random() < 0.7 else 2
        cpu = Node(id=node_id, name="aten::op", type=NodeType.COMP_NODE,
                   duration_micros=rng.randint(1, 20))  # fmt: skip
        if last_cpu[tid] is not None:
            cpu.data_deps.append(last_cpu[tid])
        cpu.attr.extend([AttributeProto(name="is_cpu_op", bool_val=True),
                         AttributeProto(name="tid", int64_val=tid)])  # fmt: skip
        nodes.append(cpu)
        last_cpu[tid] = node_id
        stream = rng.choice((7, 8, 9))
        collective = (node_id + 2) % 500 == 0  # node_id is even: the GPU node is 499, 999...
        gpu = Node(id=node_id + 1, name="kernel", duration_micros=rng.randint(1, 40),
                   type=NodeType.COMM_COLL_NODE if collective else NodeType.COMP_NODE,
                   data_deps=[node_id])  # fmt: skip
        for dep in (last_gpu[stream], rng.choice(list(last_gpu.values()))):
            if dep is not None and dep not in gpu.data_deps:
                gpu.data_deps.append(dep)
        gpu.attr.extend([AttributeProto(name="is_cpu_op", bool_val=False),
                         AttributeProto(name="stream", int64_val=stream)])  # fmt: skip
        if collective:
            gpu.attr.extend([AttributeProto(name="comm_type", int64_val=0),
                             AttributeProto(name="comm_size", int64_val=1 << 20),
                             AttributeProto(name="pg_name", string_val="0")])  # fmt: skip
        nodes.append(gpu)
        last_gpu[stream] = node_id + 1
        node_id += 2
    return nodes


def measure(count: int, ranks: int) -> dict:
    from chakra.et import EtReader, GlobalMetadata, write_et
    from chakra.simulate import LoadOptions, build_graph
    from chakra.simulate.engine import Engine  # internal: the engine alone is timed

    graphs_nodes = [synthetic_nodes(count, seed=rank) for rank in range(ranks)]
    start, start_cpu = time.perf_counter(), time.process_time()
    graphs = [build_graph(nodes, rank) for rank, nodes in enumerate(graphs_nodes)]
    built, built_cpu = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as folder:
        paths = [Path(folder, f"workload.{rank}.et") for rank in range(ranks)]
        for path, nodes in zip(paths, graphs_nodes):
            write_et(path, GlobalMetadata(version="0.0.4"), nodes)
        del graphs, nodes
        released = time.perf_counter()
        del graphs_nodes  # freeing the protobuf nodes is neither building nor running
        read_start, read_start_cpu = time.perf_counter(), time.process_time()
        graphs = []
        for rank, path in enumerate(paths):
            with EtReader(path) as reader:  # checked, as chakra_sim loads a file
                graphs.append(build_graph(reader, rank, options=LoadOptions()))
        read_built, read_built_cpu = time.perf_counter(), time.process_time()
    run_start = time.perf_counter()  # not the removal of the temporary folder
    engine = Engine(graphs)
    engine.run()
    done = time.perf_counter()
    return {"nodes": count * ranks, "build_s": built - start, "run_s": done - run_start,
            "read_build_s": read_built - read_start, "release_s": read_start - released,
            "build_cpu_s": built_cpu - start_cpu,
            "read_build_cpu_s": read_built_cpu - read_start_cpu,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}  # fmt: skip


def cli_runs(count: int, repeats: int, baseline: Optional[str]) -> None:
    """``chakra_sim`` on one file of ``count`` nodes, whole processes, interleaved."""
    from chakra.et import GlobalMetadata, write_et

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "workload.0.et")
        write_et(path, GlobalMetadata(version="0.0.4"), synthetic_nodes(count, seed=0))
        warm, cold = Path(folder, "warm"), Path(folder, "cold")
        variants = {"no cache": (sys.executable, "off", ["--no-cache"]),
                    "cold": (sys.executable, str(cold), []),
                    "warm": (sys.executable, str(warm), [])}  # fmt: skip
        if baseline:
            variants["baseline"] = (baseline, "off", [])
        _sim(sys.executable, str(warm), [str(path)])  # fills the warm cache
        walls: dict[str, list[float]] = {name: [] for name in variants}
        cpus: dict[str, list[float]] = {name: [] for name in variants}
        outputs = set()
        for _ in range(repeats):
            for name, (python, cache, extra) in variants.items():
                shutil.rmtree(cold, ignore_errors=True)
                wall, cpu, out = _sim(python, cache, [str(path), *extra])
                walls[name].append(wall)
                cpus[name].append(cpu)
                outputs.add(out)
        size_mib = path.stat().st_size / 2**20
    print(f"chakra_sim on {count:,} nodes ({size_mib:.0f} MiB), {repeats} interleaved runs each:")
    first = "baseline" if baseline else "no cache"
    for label, table in (("wall", walls), ("cpu", cpus)):
        reference = statistics.median(table[first])
        for name, values in table.items():
            median = statistics.median(values)
            print(f"  {label:<4} {name:<9} median {median:6.2f} s  spread {min(values):6.2f}-"
                  f"{max(values):6.2f} s  {median / reference:5.2f}x")  # fmt: skip
    print(f"  outputs identical: {len(outputs) == 1}")


def _sim(python: str, cache: str, argv: list[str]) -> tuple[float, float, str]:
    """One ``chakra_sim`` process: its wall and CPU (user + system) seconds, its output."""
    env = {**os.environ, "CHAKRA_CACHE_DIR": cache}
    command = [python, "-m", "chakra.cli.sim", "--log-level", "WARNING", *argv]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--ranks", type=int, default=4, help="ranks of the multi-rank case")
    parser.add_argument("--measure", nargs=2, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--cli", action="store_true", help="time chakra_sim processes instead")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each with --cli")
    parser.add_argument("--baseline-python", help="with --cli: another checkout's interpreter")
    args = parser.parse_args()
    if args.cli:
        cli_runs(args.sizes[-1], args.repeats, args.baseline_python)
        return
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return
    cases = [(size, 1) for size in args.sizes] + [(args.sizes[-1], args.ranks)]
    for size, ranks in cases:
        command = [sys.executable, __file__, "--measure", str(size), str(ranks)]
        n = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
        print(
            f"{ranks} x {size:>9,d} nodes: build {n['build_s']:6.2f} s, run {n['run_s']:6.2f} s "
            f"= {n['nodes'] / n['run_s']:>10,.0f} nodes/s simulated  peak RSS "
            f"{n['peak_rss_mib']:6.0f} MiB"
        )
        rates = [n["nodes"] / n[key] for key in ("build_s", "build_cpu_s", "read_build_s",
                                                 "read_build_cpu_s")]  # fmt: skip
        print(
            f"{'':>20}  graph build (build_graph): {rates[0]:>9,.0f} nodes/s ({rates[1]:,.0f} "
            f"per CPU s), read + build from .et: {rates[2]:>9,.0f} nodes/s ({rates[3]:,.0f})"
        )


if __name__ == "__main__":
    main()
