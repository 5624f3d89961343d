"""Names that PyTorch, Kineto, CUDA and ROCm write into traces, in one place.

Everything that classifies an event by its category or API name reads these tables, so a new
vendor API is one line here.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Optional

# --- Host execution trace -------------------------------------------------------------------

PROCESS_ROOT_NAMES = frozenset(
    {
        "[pytorch|profiler|execution_trace|process]",
        "[pytorch|profiler|execution_graph|process]",
        "__ROOT_PROCESS__",
    }
)
THREAD_ROOT_NAMES = frozenset(
    {
        "[pytorch|profiler|execution_trace|thread]",
        "[pytorch|profiler|execution_graph|thread]",
        "__ROOT_THREAD__",
    }
)
PROCESS_GROUP_INIT_NAME = "## process_group:init ##"
RECORD_PARAM_COMMS_NAME = "record_param_comms"
PROFILER_STEP_PREFIX = "ProfilerStep#"

# --- Kineto categories ------------------------------------------------------------------------


class Category:
    """Values of a Kineto event's ``cat``."""

    CPU_OP = "cpu_op"
    USER_ANNOTATION = "user_annotation"
    CUDA_RUNTIME = "cuda_runtime"
    CUDA_DRIVER = "cuda_driver"
    KERNEL = "kernel"
    GPU_MEMCPY = "gpu_memcpy"
    GPU_MEMSET = "gpu_memset"
    GPU_USER_ANNOTATION = "gpu_user_annotation"
    CUDA_SYNC = "cuda_sync"
    AC2G = "ac2g"
    FWDBWD = "fwdbwd"
    PYTHON_FUNCTION = "python_function"


CPU_OP_CATEGORIES = frozenset({Category.CPU_OP, Category.USER_ANNOTATION})
RUNTIME_CATEGORIES = frozenset({Category.CUDA_RUNTIME, Category.CUDA_DRIVER})


class GpuOpKind(str, enum.Enum):
    """What a GPU-side event does; the value is its Kineto category."""

    KERNEL = Category.KERNEL
    MEMCPY = Category.GPU_MEMCPY
    MEMSET = Category.GPU_MEMSET


GPU_OP_CATEGORIES = frozenset(kind.value for kind in GpuOpKind)
_CATEGORY_NAMES = frozenset(v for k, v in vars(Category).items() if not k.startswith("_"))
#: Category names of Kineto traces from before its late-2021 renaming (PyTorch 1.8-1.10,
#: e.g. the TensorBoard plugin's test traces), lower-cased: the category each means today.
#: ``Kernel`` and ``User annotation`` need no entry: lower-cased, with ``_`` for spaces,
#: they are today's names.
LEGACY_CATEGORIES: Mapping[str, str] = {
    "operator": Category.CPU_OP,
    "runtime": Category.CUDA_RUNTIME,
    "memcpy": Category.GPU_MEMCPY,
    "memset": Category.GPU_MEMSET,
}


def modern_category(name: str) -> Optional[str]:
    """Today's category for a ``cat`` written in another case or by an older Kineto
    (``Runtime`` -> ``cuda_runtime``, ``User annotation`` -> ``user_annotation``); None for
    a name that is neither (``Trace``, ``Python``...)."""
    lowered = name.lower().replace(" ", "_")
    if lowered in _CATEGORY_NAMES:
        return lowered
    return LEGACY_CATEGORIES.get(lowered)


# --- CUDA / HIP runtime and driver APIs -------------------------------------------------------


class RuntimeKind(str, enum.Enum):
    """What a runtime or driver call does to the GPU or to the calling thread."""

    LAUNCH = "launch"  # enqueues a kernel
    MEMCPY = "memcpy"  # enqueues a copy (cudaMemcpy itself also blocks the host)
    MEMSET = "memset"  # enqueues a memset
    EVENT_RECORD = "event_record"  # marks a point on a stream
    STREAM_WAIT = "stream_wait"  # makes a stream wait for a recorded event
    SYNC_DEVICE = "sync_device"  # host waits for every stream of the device
    SYNC_STREAM = "sync_stream"  # host waits for one stream
    SYNC_EVENT = "sync_event"  # host waits for one recorded event
    OTHER = "other"  # allocation, queries, attribute calls...


def _table(kind: RuntimeKind, *names: str) -> dict[str, RuntimeKind]:
    return dict.fromkeys(names, kind)


RUNTIME_KINDS: Mapping[str, RuntimeKind] = {
    **_table(
        RuntimeKind.LAUNCH,
        "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchKernelEx",
        "cudaLaunchCooperativeKernel", "cudaLaunchCooperativeKernelMultiDevice",
        "cudaGraphLaunch", "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel",
        "cuGraphLaunch", "hipLaunchKernel", "hipExtLaunchKernel", "hipModuleLaunchKernel",
        "hipExtModuleLaunchKernel", "hipLaunchCooperativeKernel", "hipGraphLaunch",
        "hipModuleLaunchCooperativeKernel",
    ),
    **_table(
        RuntimeKind.MEMCPY,
        "cudaMemcpy", "cudaMemcpyAsync", "cudaMemcpy2D", "cudaMemcpy2DAsync",
        "cudaMemcpyFromSymbol", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbolAsync",
        "cudaMemcpyToSymbolAsync", "cudaMemcpyPeer", "cudaMemcpyPeerAsync", "cuMemcpy",
        "cuMemcpyAsync", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoD_v2",
        "cuMemcpyDtoHAsync_v2", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoDAsync_v2",
        "hipMemcpy", "hipMemcpyAsync", "hipMemcpyWithStream", "hipMemcpyPeer",
        "hipMemcpyPeerAsync", "hipMemcpyDtoH", "hipMemcpyHtoD", "hipMemcpyDtoD",
        "hipMemcpyDtoHAsync", "hipMemcpyHtoDAsync", "hipMemcpyDtoDAsync",
    ),
    **_table(
        RuntimeKind.MEMSET,
        "cudaMemset", "cudaMemsetAsync", "cudaMemset2D", "cudaMemset2DAsync",
        "cuMemsetD8_v2", "cuMemsetD32_v2", "cuMemsetD8Async", "cuMemsetD32Async",
        "hipMemset", "hipMemsetAsync", "hipMemsetD8", "hipMemsetD32", "hipMemsetD8Async",
        "hipMemsetD32Async",
    ),
    **_table(
        RuntimeKind.EVENT_RECORD,
        "cudaEventRecord", "cudaEventRecordWithFlags", "cuEventRecord", "cuEventRecordWithFlags",
        "hipEventRecord", "hipEventRecordWithFlags",
    ),
    **_table(RuntimeKind.STREAM_WAIT, "cudaStreamWaitEvent", "cuStreamWaitEvent",
             "hipStreamWaitEvent"),
    **_table(RuntimeKind.SYNC_DEVICE, "cudaDeviceSynchronize", "cuCtxSynchronize",
             "hipDeviceSynchronize"),
    **_table(RuntimeKind.SYNC_STREAM, "cudaStreamSynchronize", "cuStreamSynchronize",
             "hipStreamSynchronize"),
    **_table(RuntimeKind.SYNC_EVENT, "cudaEventSynchronize", "cuEventSynchronize",
             "hipEventSynchronize"),
}  # fmt: skip

#: Calls that enqueue GPU work whose GPU-side event shares the call's ``correlation``.
ENQUEUING_KINDS = frozenset({RuntimeKind.LAUNCH, RuntimeKind.MEMCPY, RuntimeKind.MEMSET})
#: Synchronous copies: the host waits for the copy (cudaMemcpy and its relatives).
BLOCKING_MEMCPY_APIS = frozenset(
    {"cudaMemcpy", "cudaMemcpy2D", "cudaMemcpyFromSymbol", "cudaMemcpyToSymbol",
     "cudaMemcpyPeer", "cuMemcpy", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoD_v2",
     "hipMemcpy", "hipMemcpyPeer", "hipMemcpyDtoH", "hipMemcpyHtoD", "hipMemcpyDtoD"}
)  # fmt: skip

#: Kineto names a GPU copy by its kind and its two ends (CUPTI's memory kinds), e.g.
#: ``Memcpy HtoD (Pageable -> Device)``, ``Memcpy DtoH (Device -> Pinned)``.
PAGEABLE_MEMORY = "Pageable"


def copies_pageable_memory(gpu_op_name: str) -> bool:
    """Whether a GPU copy's name says one of its ends is pageable host memory: the call
    that enqueued it (even ``cudaMemcpyAsync``) may block the calling thread (a copy *to*
    pageable memory does; one *from* it may return once the data is staged)."""
    return PAGEABLE_MEMORY in gpu_op_name


def copy_direction(gpu_op_name: str) -> str:
    """The kind of a GPU copy its Kineto name gives (``HtoD``, ``DtoH``, ``DtoD``...), from
    ``Memcpy HtoD (Pageable -> Device)``; ``other`` when the name says none."""
    words = gpu_op_name.split()
    return words[1] if len(words) > 1 and words[0] == "Memcpy" else "other"


def runtime_kind(name: str) -> RuntimeKind:
    """Classify a ``cuda_runtime``/``cuda_driver`` event by its API name."""
    return RUNTIME_KINDS.get(name, RuntimeKind.OTHER)


# --- cuda_sync events (CUPTI synchronization records) ----------------------------------------


class SyncKind:
    """Values of a ``cuda_sync`` event's ``cuda_sync_kind`` arg."""

    EVENT_SYNC = "Event Sync"
    STREAM_WAIT_EVENT = "Stream Wait Event"
    CONTEXT_SYNC = "Context Sync"
    STREAM_SYNC = "Stream Sync"
