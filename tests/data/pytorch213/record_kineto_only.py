"""Record PyTorch 2.13 (CPU) Kineto traces alone (no host ET) in ``kineto_only/``.

What most users have: a ``torch.profiler`` trace and no ``ExecutionTraceObserver``. Run it
with a Python that has ``torch==2.13.0`` installed (not the project's own venv)::

    /work/torchvenv/bin/python tests/data/pytorch213/record_kineto_only.py

* ``kineto_only/single/``: one process, a 3-layer MLP trained with forward, backward and an
  Adam step. ``shapes.kineto.json.gz``: ``record_shapes=True``,
  ``schedule(wait=1, warmup=1, active=3)``, so ``ProfilerStep#2`` to ``#4`` are recorded;
  ``noshapes.kineto.json.gz``: the same model without ``record_shapes``,
  ``schedule(wait=1, warmup=1, active=2)`` (``ProfilerStep#2`` and ``#3``).
* ``kineto_only/gloo_2rank/``: two processes (``torch.multiprocessing.spawn``) joined by a
  ``gloo`` process group on 127.0.0.1; each trains a ``DistributedDataParallel`` MLP (its
  gradient all_reduce runs on gloo's worker threads) and all_reduces its loss, under
  ``record_shapes=True``, ``schedule(wait=1, warmup=1, active=2)``, and writes
  ``rank<r>.kineto.json.gz``.

The JSON files are exactly what ``export_chrome_trace`` wrote, gzip-compressed (mtime 0, no
file name in the header). Their content differs from run to run (timestamps, pids, thread
ids, temporary paths, which gloo worker ran which collective).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Callable

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F  # noqa: N812

# the fixtures' recorder, beside this file: its reproducible gzip, free port and torch version
from record_fixtures import EXPECTED_TORCH, free_loopback_port, gzip_json
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, schedule

HERE = Path(__file__).resolve().parent
SHAPES_SCHEDULE = {"wait": 1, "warmup": 1, "active": 3, "repeat": 1}
NOSHAPES_SCHEDULE = {"wait": 1, "warmup": 1, "active": 2, "repeat": 1}
GLOO_SCHEDULE = {"wait": 1, "warmup": 1, "active": 2, "repeat": 1}
GLOO_WORLD_SIZE = 2
LAYERS = (16, 32, 32, 4)
BATCH = 8


def run_profiled(
    step_fn: Callable[[int], None], sched: dict[str, int], record_shapes: bool, dst: Path
) -> None:
    """Run ``step_fn`` once per scheduled step under the CPU profiler (no ET observer) and
    write the Kineto trace to ``dst``."""
    n_steps = sum(sched[k] for k in ("wait", "warmup", "active"))
    with tempfile.TemporaryDirectory(prefix="chakra_pt213_kineto_") as tmp:
        kineto_tmp = Path(tmp) / "kineto.json"
        with profile(
            activities=[ProfilerActivity.CPU],
            record_shapes=record_shapes,
            schedule=schedule(**sched),
            on_trace_ready=lambda prof: prof.export_chrome_trace(str(kineto_tmp)),
        ) as prof:
            for step in range(n_steps):
                step_fn(step)
                prof.step()
        gzip_json(kineto_tmp, dst)


def mlp() -> nn.Sequential:
    """Linear 16->32, ReLU, Linear 32->32, ReLU, Linear 32->4."""
    layers: list[nn.Module] = []
    for width_in, width_out in zip(LAYERS, LAYERS[1:]):
        layers += [nn.Linear(width_in, width_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def train_step_fn(model: nn.Module, optimizer: torch.optim.Optimizer, seed: int) -> Callable:
    torch.manual_seed(seed)
    x, y = torch.randn(BATCH, LAYERS[0]), torch.randint(0, LAYERS[-1], (BATCH,))

    def train_step(_step: int) -> torch.Tensor:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return train_step


def record_single(out_dir: Path) -> None:
    """``single/``: the MLP with and without record_shapes."""
    for name, sched, shapes in (
        ("shapes", SHAPES_SCHEDULE, True),
        ("noshapes", NOSHAPES_SCHEDULE, False),
    ):
        torch.manual_seed(0)
        model = mlp()
        step = train_step_fn(model, torch.optim.Adam(model.parameters(), lr=1e-3), 1)
        run_profiled(step, sched, shapes, out_dir / "single" / f"{name}.kineto.json.gz")


def gloo_worker(rank: int, world: int, port: int, out_dir: str) -> None:
    """Body of one spawned rank: join the gloo group, train DDP under the profiler, leave."""
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        torch.manual_seed(0)  # same initial weights on every rank
        model = DistributedDataParallel(mlp())
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        train = train_step_fn(model, optimizer, 1 + rank)

        def step(n: int) -> None:
            loss = train(n)
            dist.all_reduce(loss)  # the job's mean loss, blocking, on the main thread
            _ = float(loss) / world

        dst = Path(out_dir) / "gloo_2rank" / f"rank{rank}.kineto.json.gz"
        run_profiled(step, GLOO_SCHEDULE, True, dst)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def record_gloo_2rank(out_dir: Path) -> None:
    """``gloo_2rank/``: two spawned DDP ranks, one Kineto trace each."""
    port = free_loopback_port()
    mp.spawn(gloo_worker, args=(GLOO_WORLD_SIZE, port, str(out_dir)), nprocs=GLOO_WORLD_SIZE)


FIXTURES: dict[str, Callable[[Path], None]] = {
    "single": record_single,
    "gloo_2rank": record_gloo_2rank,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=HERE / "kineto_only", help="output folder (default: here)"
    )
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
