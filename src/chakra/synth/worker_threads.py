"""The ``worker_threads`` parts of a step: the data-loader thread and the gloo-like CPU
collective, as timing-free actions (see :mod:`chakra.synth.program`).

Thread numbers are the engine's: 0 main, 2 data loader; the gloo worker (3) is driven by the
engine itself when it meets a :class:`~chakra.synth.records.CpuCollective`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Optional

from chakra.synth import transformer
from chakra.synth.records import (
    AwaitCpuCollective,
    CollectiveCall,
    CpuCollective,
    Gap,
    OpBegin,
    OpEnd,
    ProcessGroup,
    SwitchThread,
)
from chakra.synth.vocabulary import COLLECTIVES, DEFAULT_PG_STREAM, SCOPE_USER, Category

_US = 1000  # ns per µs (as program.US; not imported, program imports this module)
_END = OpEnd()
DATA_LOADER_THREAD = 2
GLOO_WORKER_THREAD = 3
DATA_LOADER_NEXT = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
GLOO_NAME = "gloo:all_reduce"
WAIT_NAME = "c10d::wait"
#: The user annotation around the step's blocking metrics all_reduce (``blocking_gloo``).
LOG_METRICS = "## log_metrics ##"
#: Samples per batch the loader stacks (one ``aten::stack`` each for inputs and labels).
_SAMPLE = ("Tensor(float)", (transformer.TOKENS // 4, transformer.HIDDEN))


def gloo_group(ranks: int) -> ProcessGroup:
    """The CPU (gloo) group of every rank: not a CUDA group, so not in the NCCL pg table
    and with no stream (``stream`` is the default group's, unused)."""
    return ProcessGroup("gloo", "gloo_pg", tuple(range(ranks)), DEFAULT_PG_STREAM)


def data_loader_actions() -> Iterator[object]:
    """Hand the CPU to the data-loader thread, which collates a batch (two ``aten::stack``
    and an ``aten::pin_memory``, CPU only, about 200-500 µs), then back to the main thread,
    whose next op depends on the loader's. Both switches are inter-thread edges, as for the
    autograd thread (the engine's CPU runs one thread at a time)."""
    yield SwitchThread(DATA_LOADER_THREAD, 5 * _US, 15 * _US)
    yield OpBegin(DATA_LOADER_NEXT, Category.USER_ANNOTATION, scope=SCOPE_USER)
    samples = ("GenericList[Tensor(float)]", (_SAMPLE[1],) * 4)
    for _tensor in ("inputs", "labels"):
        yield Gap(10 * _US, 30 * _US)
        yield OpBegin("aten::stack", inputs=(samples, ("Int", 0)))
        yield OpBegin("aten::cat", inputs=(samples, ("Int", 0)))
        yield Gap(40 * _US, 120 * _US)
        yield _END
        yield _END
    batch = ("Tensor(float)", (transformer.TOKENS, transformer.HIDDEN))
    yield Gap(10 * _US, 30 * _US)
    yield OpBegin("aten::pin_memory", inputs=(batch,))
    yield OpBegin("aten::_pin_memory", inputs=(batch,))
    yield OpBegin("aten::copy_", inputs=(batch, batch, ("Bool", False)))
    yield Gap(50 * _US, 150 * _US)
    yield _END
    yield _END
    yield _END
    yield _END
    yield SwitchThread(0, 10 * _US, 30 * _US)


def gloo_allreduce_actions(call: CollectiveCall) -> Iterator[object]:
    """``c10d::allreduce_`` on the main thread (no GPU launch), then ``call`` handed to the
    gloo worker, which starts once the op returned; the main thread goes on at once."""
    names = COLLECTIVES["all_reduce"]
    tensor = ("GenericList[Tensor(float)]", ((call.in_nelems,),))
    yield OpBegin(names.c10d, schema=names.schema, inputs=(tensor,))
    yield _END
    yield CpuCollective(call, GLOO_NAME)


def gloo_wait_actions() -> Iterator[object]:
    """The main thread waits for the gloo work (``work.wait()``), its op starting after the
    worker's ``gloo:`` op ended."""
    yield AwaitCpuCollective()
    yield OpBegin(WAIT_NAME)
    yield _END


def gloo_blocking_actions(call: CollectiveCall, annotation: Optional[str]) -> Iterator[object]:
    """A blocking (``async_op=False``) gloo collective: ``c10d::<op>`` on the main thread
    returns at once, the worker runs ``gloo:<op>`` and the main thread waits for it, in no
    op: self time of the op enclosing ``c10d::<op>`` (``annotation`` when given, a user
    annotation opened here; else the op open now, ``ProfilerStep#N``)."""
    names = COLLECTIVES[call.kind]
    tensor = ("GenericList[Tensor(float)]", ((call.in_nelems,),))
    if annotation is not None:
        yield OpBegin(annotation, Category.USER_ANNOTATION, scope=SCOPE_USER)
    yield OpBegin(names.c10d, schema=names.schema, inputs=(tensor,))
    yield _END
    yield CpuCollective(call, f"gloo:{call.kind}", blocking=True)
    if annotation is not None:
        yield _END
