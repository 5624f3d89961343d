"""Record small PyTorch 2.13 (CPU, gloo) training jobs at two network speeds.

Ground truth for network what-ifs: the same job, recorded with the loopback link capped at a
fast and at a slow rate. Run it as root with a Python that has ``torch==2.13.0`` (not the
project's own venv)::

    /work/torchvenv/bin/python tests/data/pytorch213/record_gloo_network.py \\
        --out /work/recordings --world-sizes 2 4 --speeds fast slow --repeats 3

Each recording gets a fresh network namespace (``ip netns add``), whose loopback is brought up
with an Ethernet MTU (1500: a token bucket drops the 64 KiB loopback packets that a smaller
burst cannot hold) and capped by a token-bucket filter (``tc qdisc add dev lo root tbf rate R
burst B latency 20ms``; netem is not available here). Every rank of the job runs inside that
namespace, so all of their traffic shares the one capped link: R is the job's aggregate
bandwidth, not a per-rank one. The namespace is deleted afterwards. Repeats of one world size
are interleaved over the speeds (r1 fast, r1 slow, r2 fast, ...) so that drifting machine load
falls on both speeds alike.

Per rank (``torch.multiprocessing.spawn``, gloo on 127.0.0.1 over ``lo``, one intra-op
thread), each step, labelled ``## step N ##``:

* forward, backward and SGD step of a 3-layer MLP (128-512-128-10, 133k parameters, 532 KB of
  gradients) wrapped in ``DistributedDataParallel`` with 0.25 MB buckets, so its gradient
  all_reduces run on gloo's worker threads while backward goes on;
* a blocking ``all_reduce`` (``async_op=False``) of 64k floats;
* an async ``all_reduce`` (``async_op=True``) of 64k floats, some compute (matmuls), then
  ``work.wait()``;
* a ``broadcast`` of 32k floats from rank 0.

Two unprofiled steps first (gloo connects, DDP rebuilds its buckets), then three under
``torch.profiler.profile(schedule=schedule(wait=0, warmup=1, active=2))`` with an
``ExecutionTraceObserver`` handed to the profiler: both traces hold the same two active steps.

Output, one folder per recording: ``gloo{N}_{speed}_r{k}/rank{r}.host_et.json.gz`` and
``rank{r}.kineto.json.gz`` (exactly what torch wrote, gzip-compressed with mtime 0 and no file
name), and ``recording.json`` (the command, rate, burst, torch version, wall time and the
qdisc's counters after the run).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXPECTED_TORCH = "2.13.0"
#: name -> (tbf rate, tbf burst): burst is about 1 ms of traffic at the rate.
SPEEDS = {"fast": ("1gbit", "128kb"), "slow": ("200mbit", "32kb")}
TBF_LATENCY = "20ms"
LO_MTU = 1500
UNPROFILED_STEPS = 2
SCHEDULE = {"wait": 0, "warmup": 1, "active": 2, "repeat": 1}
PROFILED_STEPS = SCHEDULE["wait"] + SCHEDULE["warmup"] + SCHEDULE["active"]
BATCH = 256
LAYERS = (128, 512, 128, 10)
BUCKET_CAP_MB = 0.25
ALLREDUCE_FLOATS = 64 * 1024
BROADCAST_FLOATS = 32 * 1024


def gzip_json(src: Path, dst: Path) -> None:
    """Compress ``src`` into ``dst`` byte for byte, with a reproducible gzip header."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    with src.open("rb") as fin, dst.open("wb") as raw:
        fout = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9)
        with fout:
            shutil.copyfileobj(fin, fout)


# --------------------------------------------------------------------------- one rank (torch)


def rank_main(rank: int, world: int, port: int, out_dir: str) -> None:
    """Body of one spawned rank: join the gloo group, train, record, leave."""
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel
    from torch.profiler import (
        ExecutionTraceObserver,
        ProfilerActivity,
        profile,
        record_function,
        schedule,
    )

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    torch.set_num_threads(1)
    torch.manual_seed(0)  # same initial weights on every rank
    dist.init_process_group("gloo", rank=rank, world_size=world)
    layers: list[nn.Module] = []
    for width_in, width_out in zip(LAYERS, LAYERS[1:]):
        layers += [nn.Linear(width_in, width_out), nn.ReLU()]
    model = DistributedDataParallel(nn.Sequential(*layers[:-1]), bucket_cap_mb=BUCKET_CAP_MB)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    torch.manual_seed(1 + rank)
    x, y = torch.randn(BATCH, LAYERS[0]), torch.randint(0, LAYERS[-1], (BATCH,))
    stats = torch.ones(ALLREDUCE_FLOATS)
    extra = torch.ones(ALLREDUCE_FLOATS)
    shared = torch.full((BROADCAST_FLOATS,), float(rank))
    a = torch.randn(256, 256)

    def step(n: int) -> None:
        with record_function(f"## step {n} ##"):
            with record_function("## forward ##"):
                loss = nn.functional.cross_entropy(model(x), y)
            with record_function("## backward ##"):
                loss.backward()
            with record_function("## optimizer ##"):
                optimizer.step()
                optimizer.zero_grad()
            dist.all_reduce(stats, async_op=False)
            work = dist.all_reduce(extra, async_op=True)
            with record_function("## overlap compute ##"):
                b = a
                for _ in range(4):
                    b = torch.tanh(b @ a)
            work.wait()
            dist.broadcast(shared, src=0)
            stats.div_(world)
            extra.div_(world)
            _ = float(b.sum())

    for n in range(UNPROFILED_STEPS):
        step(n)
    with tempfile.TemporaryDirectory(prefix="chakra_gloo_net_") as tmp:
        host_tmp, kineto_tmp = Path(tmp) / "host_et.json", Path(tmp) / "kineto.json"
        et = ExecutionTraceObserver().register_callback(str(host_tmp))
        with profile(
            activities=[ProfilerActivity.CPU],
            record_shapes=True,
            schedule=schedule(**SCHEDULE),
            on_trace_ready=lambda prof: prof.export_chrome_trace(str(kineto_tmp)),
            execution_trace_observer=et,
        ) as prof:
            for n in range(UNPROFILED_STEPS, UNPROFILED_STEPS + PROFILED_STEPS):
                step(n)
                prof.step()
        et.unregister_callback()
        folder = Path(out_dir)
        gzip_json(host_tmp, folder / f"rank{rank}.host_et.json.gz")
        gzip_json(kineto_tmp, folder / f"rank{rank}.kineto.json.gz")
    dist.barrier()
    dist.destroy_process_group()


def free_loopback_port() -> int:
    """Ask the kernel for a free TCP port on 127.0.0.1 (of the namespace we run in)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_job(world: int, out_dir: Path) -> None:
    """Inside the namespace: spawn ``world`` ranks that record into ``out_dir``."""
    import torch
    import torch.multiprocessing as mp

    if not torch.__version__.startswith(EXPECTED_TORCH):
        raise SystemExit(f"need torch {EXPECTED_TORCH}, found {torch.__version__}")
    mp.spawn(rank_main, args=(world, free_loopback_port(), str(out_dir)), nprocs=world)


# --------------------------------------------------------------------------- the driver (root)


def sh(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def record_one(world: int, speed: str, out_dir: Path) -> dict[str, object]:
    """One recording in a fresh namespace whose loopback is capped at ``SPEEDS[speed]``."""
    rate, burst = SPEEDS[speed]
    ns = f"chakra_rec_{os.getpid()}"
    sh("ip", "netns", "add", ns)
    try:
        sh("ip", "-n", ns, "link", "set", "lo", "mtu", str(LO_MTU))
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        qdisc = ["tc", "qdisc", "add", "dev", "lo", "root", "tbf"]
        sh("ip", "netns", "exec", ns, *qdisc, "rate", rate, "burst", burst, "latency", TBF_LATENCY)
        child = [sys.executable, str(Path(__file__).resolve()), "--child-world-size", str(world)]
        start = time.monotonic()
        subprocess.run(["ip", "netns", "exec", ns, *child, "--out", str(out_dir)], check=True)
        wall_s = time.monotonic() - start
        stats = sh("ip", "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", "lo")
    finally:
        sh("ip", "netns", "del", ns)
    return {
        "world_size": world, "speed": speed, "tbf_rate": rate, "tbf_burst": burst,
        "tbf_latency": TBF_LATENCY, "lo_mtu": LO_MTU, "wall_s": round(wall_s, 2),
        "qdisc_stats": stats.strip(), "command": " ".join(sys.argv),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("/work/recordings"))
    parser.add_argument("--world-sizes", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--speeds", nargs="+", choices=sorted(SPEEDS), default=["fast", "slow"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child-world-size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_world_size:
        run_job(args.child_world_size, args.out)
        return
    import torch

    for world in args.world_sizes:
        for repeat in range(1, args.repeats + 1):
            for speed in args.speeds:
                folder = args.out / f"gloo{world}_{speed}_r{repeat}"
                info = record_one(world, speed, folder)
                info["torch"] = torch.__version__
                (folder / "recording.json").write_text(json.dumps(info, indent=2) + "\n")
                print(f"recorded {folder} in {info['wall_s']} s", flush=True)


if __name__ == "__main__":
    main()
