"""Record the PyTorch 2.13 (CPU) host ET + Kineto fixtures in this folder.

Run it with a Python that has ``torch==2.13.0`` installed (not the project's own venv)::

    /work/torchvenv/bin/python tests/data/pytorch213/record_fixtures.py

Every fixture goes into its own sub-folder next to this script (or under ``--out``):

* ``single/``: one process, a tiny transformer-style block trained for three steps under
  ``torch.profiler.profile(schedule=schedule(wait=0, warmup=1, active=2))``; the
  ``ExecutionTraceObserver`` is handed to the profiler, so it records exactly the two active
  steps (``ProfilerStep#1`` and ``ProfilerStep#2``) that Kineto records.
* ``gloo_2rank/``: two processes (``torch.multiprocessing.spawn``) joined by a ``gloo`` process
  group on 127.0.0.1; each runs two steps (one warm-up, one active, ``ProfilerStep#1``) of a
  little compute plus all_reduce, all_gather_single, all_gather, broadcast,
  reduce_scatter_single, all_to_all_single, all_to_all, barrier and a send (rank 0) / recv
  (rank 1) pair, and writes its own host ET and Kineto trace.

The JSON files are exactly what torch wrote; this script only gzip-compresses them (with gzip
mtime 0 and no file name in the gzip header, so the compression itself adds no variation).
Their content still differs from run to run (timestamps, pids, thread ids, temporary paths).
"""

from __future__ import annotations

import argparse
import gzip
import math
import os
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Callable

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F  # noqa: N812
from torch import nn
from torch.profiler import (
    ExecutionTraceObserver,
    ProfilerActivity,
    profile,
    schedule,
)

HERE = Path(__file__).resolve().parent
EXPECTED_TORCH = "2.13.0"

# Three loop iterations: step 0 is warm-up (profiler running, nothing kept), steps 1 and 2
# are recorded by both Kineto and the execution trace observer.
SINGLE_SCHEDULE = {"wait": 0, "warmup": 1, "active": 2, "repeat": 1}
# Two loop iterations per rank: step 0 is warm-up (lets gloo connect), step 1 is recorded.
GLOO_SCHEDULE = {"wait": 0, "warmup": 1, "active": 1, "repeat": 1}
GLOO_WORLD_SIZE = 2


def gzip_json(src: Path, dst: Path) -> None:
    """Compress ``src`` into ``dst`` byte for byte, with a reproducible gzip header."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    with src.open("rb") as fin, dst.open("wb") as raw:
        fout = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9)
        with fout:
            shutil.copyfileobj(fin, fout)


def run_profiled(
    step_fn: Callable[[int], None],
    n_steps: int,
    sched: dict[str, int],
    host_et_dst: Path,
    kineto_dst: Path,
) -> None:
    """Run ``step_fn`` ``n_steps`` times under the profiler with an ET observer attached.

    The observer is passed as ``execution_trace_observer=``, so the profiler starts it just
    before Kineto starts recording and stops it just before Kineto stops: both files cover
    the same active steps of the same run.
    """
    with tempfile.TemporaryDirectory(prefix="chakra_pt213_") as tmp:
        host_et_tmp = Path(tmp) / "host_et.json"
        kineto_tmp = Path(tmp) / "kineto.json"
        et = ExecutionTraceObserver().register_callback(str(host_et_tmp))

        def on_ready(prof: profile) -> None:
            prof.export_chrome_trace(str(kineto_tmp))

        with profile(
            activities=[ProfilerActivity.CPU],
            record_shapes=True,
            schedule=schedule(**sched),
            on_trace_ready=on_ready,
            execution_trace_observer=et,
        ) as prof:
            for step in range(n_steps):
                step_fn(step)
                prof.step()
        # Leaving the profiler calls et.cleanup(), which finalizes host_et_tmp; be explicit.
        et.unregister_callback()
        gzip_json(host_et_tmp, host_et_dst)
        gzip_json(kineto_tmp, kineto_dst)


# --------------------------------------------------------------------------- single process


class TinyBlock(nn.Module):
    """A post-norm transformer-style block (single-head attention, GELU MLP) and a classifier."""

    def __init__(self, dim: int = 16, hidden: int = 32, n_classes: int = 4) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.norm1 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, n_classes)
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.dim), dim=-1)
        x = self.norm1(x + scores @ v)
        x = self.norm2(x + self.fc2(F.gelu(self.fc1(x))))
        return self.head(x.mean(dim=1))


def record_single(out_dir: Path) -> None:
    """Fixture ``single/``: forward, backward and SGD step of ``TinyBlock``, 2 recorded steps."""
    torch.manual_seed(0)
    model = TinyBlock()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(2, 4, 16)  # batch 2, sequence 4, width 16
    y = torch.tensor([1, 3])

    def train_step(_step: int) -> None:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()

    n_steps = sum(SINGLE_SCHEDULE[k] for k in ("wait", "warmup", "active"))
    run_profiled(
        train_step,
        n_steps,
        SINGLE_SCHEDULE,
        out_dir / "single" / "host_et.json.gz",
        out_dir / "single" / "kineto.json.gz",
    )


# --------------------------------------------------------------------------- gloo, 2 ranks


def free_loopback_port() -> int:
    """Ask the kernel for a free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def collectives_step(rank: int, world: int, weight: torch.Tensor) -> None:
    """A little compute, then one of each collective gloo supports here (all blocking)."""
    t = torch.relu(torch.full((4, 4), float(rank + 1)) @ weight)  # compute

    dist.all_reduce(t)  # sum
    gathered = torch.empty(world * 4, 4)
    dist.all_gather_single(gathered, t)  # 2.13 name of all_gather_into_tensor
    pieces = [torch.empty(4, 4) for _ in range(world)]
    dist.all_gather(pieces, t)
    dist.broadcast(t, src=0)
    shard = torch.empty(4 // world, 4)
    dist.reduce_scatter_single(shard, t)  # 2.13 name of reduce_scatter_tensor
    a2a_single = torch.empty(4, 4)
    dist.all_to_all_single(a2a_single, t)
    a2a_list = [torch.empty(2, 4) for _ in range(world)]
    dist.all_to_all(a2a_list, list(t.chunk(world)))
    dist.barrier()
    if rank == 0:
        dist.send(t[0].contiguous(), dst=1)
    elif rank == 1:
        buf = torch.empty(4)
        dist.recv(buf, src=0)

    outputs = [gathered, shard, a2a_single, *pieces, *a2a_list]
    _ = sum(o.sum() for o in outputs).item()


def gloo_worker(rank: int, world: int, port: int, out_dir: str) -> None:
    """Body of one spawned rank: join the gloo group, record, leave."""
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    torch.set_num_threads(1)
    torch.manual_seed(rank)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        weight = torch.eye(4)
        n_steps = sum(GLOO_SCHEDULE[k] for k in ("wait", "warmup", "active"))
        folder = Path(out_dir) / "gloo_2rank"
        run_profiled(
            lambda _step: collectives_step(rank, world, weight),
            n_steps,
            GLOO_SCHEDULE,
            folder / f"rank{rank}.host_et.json.gz",
            folder / f"rank{rank}.kineto.json.gz",
        )
        dist.barrier()
    finally:
        dist.destroy_process_group()


def record_gloo_2rank(out_dir: Path) -> None:
    """Fixture ``gloo_2rank/``: two spawned ranks, one host ET and one Kineto trace each."""
    port = free_loopback_port()
    mp.spawn(gloo_worker, args=(GLOO_WORLD_SIZE, port, str(out_dir)), nprocs=GLOO_WORLD_SIZE)


FIXTURES: dict[str, Callable[[Path], None]] = {
    "single": record_single,
    "gloo_2rank": record_gloo_2rank,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="output folder (default: here)")
    parser.add_argument(
        "--only", choices=sorted(FIXTURES), action="append", help="record only these fixtures"
    )
    args = parser.parse_args()
    if not torch.__version__.startswith(EXPECTED_TORCH):
        raise SystemExit(f"need torch {EXPECTED_TORCH}, found {torch.__version__}")
    torch.set_num_threads(1)
    for name in args.only or list(FIXTURES):
        FIXTURES[name](args.out)
        print(f"recorded {name}/")


if __name__ == "__main__":
    main()
