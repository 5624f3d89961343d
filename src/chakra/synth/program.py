"""What each rank does in a training step, as a timing-free sequence of actions.

The program depends only on the options and the rank's place in its process groups, never on
timing, so every member of a process group issues the same collectives in the same order.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from chakra.synth import transformer, worker_threads
from chakra.synth.collectives import collective_actions, collective_call
from chakra.synth.options import SynthOptions
from chakra.synth.records import (
    CollectiveCall,
    DeviceSync,
    EventRecord,
    EventSync,
    Gap,
    Launch,
    OpBegin,
    OpEnd,
    ProcessGroup,
    StreamSync,
    StreamWait,
    SwitchThread,
)
from chakra.synth.vocabulary import (
    COMPUTE_STREAM,
    COPY_STREAM,
    DDP_COPY_BUCKET,
    DEFAULT_PG_STREAM,
    EVALUATE_FUNCTION,
    MEMCPY_DTOD,
    MEMCPY_DTOH_PAGEABLE,
    MEMCPY_DTOH_PINNED,
    MEMCPY_HTOD,
    MEMSET_DEVICE,
    PROFILER_STEP,
    SCOPE_BACKWARD_FUNCTION,
    SCOPE_USER,
    SUBGROUP_STREAM,
    Category,
)

US = 1000  # ns per µs
_END = OpEnd()
#: GPU ops per step outside the layers (copies, loss, optimizer, step-level collectives).
STEP_OVERHEAD_GPU_OPS = 14


class JobPlan(msgspec.Struct, frozen=True):
    """The shape of the job: process groups, layers per step, the layer's autograd nodes."""

    options: SynthOptions
    groups: tuple[ProcessGroup, ...]
    layers: int
    layer: tuple
    loss: transformer.LayerOp

    def pair_group(self, rank: int) -> ProcessGroup:
        """The 2-rank sub-group ``rank`` belongs to (a singleton for the last of an odd N)."""
        return self.groups[1 + rank // 2]


def plan_job(options: SynthOptions) -> JobPlan:
    """Process groups and layer count for ``options`` (pure)."""
    n = options.ranks
    groups = [ProcessGroup("0", "default_pg", tuple(range(n)), DEFAULT_PG_STREAM)]
    for index, first in enumerate(range(0, n, 2)):
        members = tuple(range(first, min(first + 2, n)))
        groups.append(ProcessGroup(str(index + 1), "tp_group", members, SUBGROUP_STREAM))
    layer = transformer.transformer_layer()
    per_layer = transformer.layer_gpu_ops(layer) + 2  # + forward all_gather, backward all_reduce
    layers = max(1, round((options.ops_per_step - STEP_OVERHEAD_GPU_OPS) / per_layer))
    return JobPlan(options, tuple(groups), layers, layer, transformer.loss_op())


class _Counters:
    """Per-rank program counters: collective sequence per group, events, autograd seq."""

    def __init__(self) -> None:
        self.seq: dict[str, int] = {}
        self.event = 0
        self.autograd_seq = 0

    def next_seq(self, group: str) -> int:
        value = self.seq.get(group, 0)
        self.seq[group] = value + 1
        return value

    def next_event(self) -> int:
        self.event += 1
        return self.event


def _call(counters: _Counters, plan: JobPlan, kind: str, group: ProcessGroup) -> CollectiveCall:
    seq = counters.next_seq(group.name)
    return collective_call(kind, group, seq, plan.options.network_factor)


def _tree_actions(tree: transformer.OpTree, **first: object) -> Iterator[object]:
    """Enter ``tree`` depth first; ``first`` sets extra fields on its root op only."""
    stack: list[tuple[transformer.OpTree, int]] = [(tree, 0)]
    yield OpBegin(tree.name, schema=tree.schema, inputs=tree.inputs, **first)
    while stack:
        node, index = stack.pop()
        if index == 0:
            for kernel in node.kernels:
                yield Launch(
                    kernel.api,
                    Category.KERNEL,
                    kernel.name,
                    COMPUTE_STREAM,
                    int(kernel.base_us * US),
                )
        if index < len(node.children):
            stack.append((node, index + 1))
            child = node.children[index]
            yield OpBegin(child.name, schema=child.schema, inputs=child.inputs)
            stack.append((child, 0))
        else:
            yield _END


def _copy(api: str, name: str, stream: int, base_us: int, nbytes: int, blocking: bool = False):
    return Launch(api, Category.GPU_MEMCPY, name, stream, base_us * US, nbytes, blocking=blocking)


def _to_copy(
    launch: Launch, record: EventRecord = None, device: str = "cuda:0"
) -> Iterator[object]:
    """``aten::to`` (to ``device``) -> ``aten::_to_copy`` -> ``aten::copy_`` issuing ``launch``."""
    shape = ("Tensor(float)", (launch.nbytes // 4,))
    yield OpBegin("aten::to", inputs=(shape, ("Device", device), ("Bool", True)))
    yield OpBegin("aten::_to_copy", inputs=(shape,))
    yield OpBegin("aten::copy_", inputs=(shape, shape, ("Bool", True)))
    yield launch
    if record is not None:
        yield record
    yield _END
    yield _END
    yield _END


def _step_prologue(counters: _Counters) -> Iterator[object]:
    """zero_grad (a memset), then the input batch copied in on the copy stream."""
    grad = ("Tensor(float)", (transformer.HIDDEN * transformer.HIDDEN,))
    yield OpBegin("Optimizer.zero_grad#AdamW.zero_grad", Category.USER_ANNOTATION, scope=SCOPE_USER)
    yield OpBegin("aten::zero_", inputs=(grad,))
    yield OpBegin("aten::fill_", inputs=(grad, ("Int", 0)))
    yield Launch(
        "cudaMemsetAsync",
        Category.GPU_MEMSET,
        MEMSET_DEVICE,
        COMPUTE_STREAM,
        3 * US,
        transformer.HIDDEN * transformer.HIDDEN * 4,
    )
    yield _END
    yield _END
    yield _END
    yield Gap(2 * US, 20 * US)
    ready = counters.next_event()
    batch = _copy(
        "cudaMemcpyAsync", MEMCPY_HTOD, COPY_STREAM, 25, transformer.TOKENS * transformer.HIDDEN * 4
    )
    yield from _to_copy(batch, EventRecord(COPY_STREAM, ready))
    yield StreamWait(COMPUTE_STREAM, ready)


def _forward(plan: JobPlan, rank: int, counters: _Counters) -> Iterator[object]:
    """Buffer broadcast, the layers (with tensor-parallel all_gather, one all_to_all and a
    send/recv pair mid-way), the loss."""
    pair = plan.pair_group(rank)
    yield from collective_actions(
        _call(counters, plan, "broadcast", plan.groups[0]), rank, counters.next_event, True
    )
    for layer_index in range(plan.layers):
        for op_index, op in enumerate(plan.layer):
            yield Gap(1 * US, 12 * US)
            seq = counters.autograd_seq
            counters.autograd_seq += 1
            yield from _tree_actions(op.forward, seq=seq, fwd_thread=0, flow_start=True)
            if op_index == 5:
                call = _call(counters, plan, "all_gather", pair)
                yield from collective_actions(call, rank, counters.next_event, True)
        if layer_index == plan.layers // 2:
            call = _call(counters, plan, "all_to_all", plan.groups[0])
            yield from collective_actions(call, rank, counters.next_event, True)
            if len(pair.ranks) == 2:
                kind = "send" if rank == pair.ranks[0] else "recv"
                yield from collective_actions(
                    _call(counters, plan, kind, pair), rank, counters.next_event, True
                )
    yield Gap(2 * US, 10 * US)
    seq = counters.autograd_seq
    counters.autograd_seq += 1
    yield from _tree_actions(plan.loss.forward, seq=seq, fwd_thread=0, flow_start=True)


def _backward_node(op: transformer.LayerOp, seq: int) -> Iterator[object]:
    """``evaluate_function: XBackward0`` -> ``XBackward0`` -> its aten ops; AccumulateGrad
    for each weight."""
    yield OpBegin(f"{EVALUATE_FUNCTION}{op.backward}", seq=seq, fwd_thread=1, flow_end=True)
    yield OpBegin(
        op.backward, seq=seq, backward_of=seq, fwd_thread=1, scope=SCOPE_BACKWARD_FUNCTION
    )
    for child in op.backward_children:
        yield from _tree_actions(child)
    yield _END
    yield _END
    grad = ("Tensor(float)", (transformer.HIDDEN,))
    for _ in range(op.weights):
        yield Gap(1 * US, 4 * US)
        yield OpBegin(f"{EVALUATE_FUNCTION}torch::autograd::AccumulateGrad")
        yield OpBegin("torch::autograd::AccumulateGrad", scope=SCOPE_BACKWARD_FUNCTION)
        yield from _tree_actions(
            transformer.OpTree(
                "aten::add_",
                "",
                (grad, grad),
                kernels=(transformer.Kernel(transformer.ADD_KERNEL, 4.0),),
            )
        )
        yield _END
        yield _END


def _backward(
    plan: JobPlan, rank: int, counters: _Counters, last_reduce: int, scatter_done: int
) -> Iterator[object]:
    """Backward nodes in reverse order on the autograd thread; a DDP all_reduce (async) after
    each layer, the last recording ``last_reduce``; a reduce_scatter recording
    ``scatter_done`` at the end."""
    seq = counters.autograd_seq - 1
    yield from _backward_node(plan.loss, seq)
    for layer_index in range(plan.layers):
        for op in reversed(plan.layer):
            seq -= 1
            yield Gap(1 * US, 6 * US)
            yield from _backward_node(op, seq)
        call = _call(counters, plan, "all_reduce", plan.groups[0])
        last = layer_index == plan.layers - 1
        after = last_reduce if last else 0
        yield from collective_actions(call, rank, counters.next_event, False, after)
    call = _call(counters, plan, "reduce_scatter", plan.pair_group(rank))
    yield from collective_actions(call, rank, counters.next_event, False, scatter_done)


def _copy_buckets_to_grads() -> Iterator[object]:
    """DDP after backward, on the main thread: each of two all-reduced gradient buckets is
    copied back into the gradients (a device-to-device copy). Filed in the host ET under an
    autograd op that had already ended (``stale_host_parents``)."""
    grads = ("Tensor(float)", (transformer.HIDDEN * transformer.HIDDEN,))
    for _bucket in range(2):
        yield Gap(2 * US, 6 * US)
        yield OpBegin(DDP_COPY_BUCKET, stale_parent=True)
        yield OpBegin("aten::copy_", inputs=(grads, grads, ("Bool", False)))
        yield _copy("cudaMemcpyAsync", MEMCPY_DTOD, COMPUTE_STREAM, 8, grads[1][0] * 4)
        yield _END
        yield _END


def _optimizer(waits: tuple[int, ...], stale_parent: bool) -> Iterator[object]:
    """The compute stream waits for the gradients' collectives, then two foreach kernels;
    ``stale_parent``: filed in the host ET under an ended autograd op."""
    yield OpBegin(
        "Optimizer.step#AdamW.step",
        Category.USER_ANNOTATION,
        scope=SCOPE_USER,
        stale_parent=stale_parent,
    )
    for event in waits:
        yield StreamWait(COMPUTE_STREAM, event)
    params = ("GenericList[Tensor(float)]", ((transformer.HIDDEN, transformer.HIDDEN),) * 4)
    for name in ("aten::_foreach_mul_", "aten::_foreach_add_"):
        yield Gap(2 * US, 8 * US)
        kernel = transformer.Kernel(transformer.MULTI_TENSOR, 30.0)
        yield from _tree_actions(transformer.OpTree(name, "", (params, params), kernels=(kernel,)))
    yield _END


def _epilogue(counters: _Counters, pageable_async_copy: bool) -> Iterator[object]:
    """``loss.item()`` (a blocking cudaMemcpy), with ``pageable_async_copy`` a ``.cpu()``
    whose cudaMemcpyAsync to pageable memory blocks as well, a metrics copy out on the copy
    stream with a stream sync, an event sync, a device sync."""
    scalar = ("Tensor(float)", ())
    yield OpBegin("aten::item", inputs=(scalar,))
    yield OpBegin("aten::_local_scalar_dense", inputs=(scalar,))
    yield _copy("cudaMemcpy", MEMCPY_DTOH_PAGEABLE, COMPUTE_STREAM, 2, 4, blocking=True)
    yield _END
    yield _END
    if pageable_async_copy:
        copy = _copy(
            "cudaMemcpyAsync", MEMCPY_DTOH_PAGEABLE, COMPUTE_STREAM, 4, 1 << 14, blocking=True
        )
        yield from _to_copy(copy, device="cpu")
    yield Gap(5 * US, 30 * US)
    metrics_ready = counters.next_event()
    yield EventRecord(COMPUTE_STREAM, metrics_ready)
    yield StreamWait(COPY_STREAM, metrics_ready)
    yield from _to_copy(_copy("cudaMemcpyAsync", MEMCPY_DTOH_PINNED, COPY_STREAM, 6, 1 << 16))
    yield StreamSync(COPY_STREAM)
    yield Gap(3 * US, 15 * US)
    timer = counters.next_event()
    yield EventRecord(COMPUTE_STREAM, timer)
    yield EventSync(timer)
    yield Gap(3 * US, 15 * US)
    yield DeviceSync()


def rank_actions(plan: JobPlan, rank: int) -> Iterator[object]:
    """Every action of ``rank`` over all profiled steps, in program order (a generator: the
    program is never held in memory). With ``worker_threads`` the data loader runs before
    the prologue, and a gloo all_reduce is issued before the optimizer and waited for after;
    with ``blocking_gloo`` a blocking gloo broadcast follows the data loader and a blocking
    all_reduce in ``## log_metrics ##`` precedes the epilogue; with ``stale_host_parents``
    DDP copies the buckets back to the gradients after backward."""
    counters = _Counters()
    options = plan.options
    threads, blocking, stale = (
        options.worker_threads, options.blocking_gloo, options.stale_host_parents
    )  # fmt: skip
    gloo = worker_threads.gloo_group(options.ranks)
    for step in range(options.steps):
        yield Gap(40 * US, 120 * US)
        yield OpBegin(
            PROFILER_STEP.format(step), Category.USER_ANNOTATION, scope=SCOPE_USER, step=step
        )
        yield Gap(5 * US, 15 * US)
        if threads:
            yield from worker_threads.data_loader_actions()
        if blocking:
            call = _call(counters, plan, "broadcast", gloo)
            yield from worker_threads.gloo_blocking_actions(call, None)
        yield from _step_prologue(counters)
        yield from _forward(plan, rank, counters)
        yield SwitchThread(1, 15 * US, 40 * US)
        last_reduce, scatter_done = counters.next_event(), counters.next_event()
        yield from _backward(plan, rank, counters, last_reduce, scatter_done)
        yield SwitchThread(0, 10 * US, 30 * US)
        if stale:
            yield from _copy_buckets_to_grads()
        if threads:
            call = _call(counters, plan, "all_reduce", gloo)
            yield from worker_threads.gloo_allreduce_actions(call)
        yield from _optimizer((last_reduce, scatter_done), stale)
        if threads:
            yield from worker_threads.gloo_wait_actions()
        if blocking:
            yield Gap(5 * US, 15 * US)
            call = _call(counters, plan, "all_reduce", gloo)
            yield from worker_threads.gloo_blocking_actions(call, worker_threads.LOG_METRICS)
        yield Gap(5 * US, 20 * US)
        yield from _epilogue(counters, options.pageable_async_copy)
        yield _END
