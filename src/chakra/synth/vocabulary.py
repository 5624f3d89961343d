"""Names the generator writes: CUDA APIs and their CUPTI ids, NCCL kernels, schema strings.

Categories and root names come from :mod:`chakra.ingest.vocabulary` so that what the
generator writes and what the loaders read are spelt in one place.
"""

from __future__ import annotations

from chakra.ingest.vocabulary import Category, SyncKind

__all__ = [
    "API_CATEGORY",
    "CBID",
    "COLLECTIVES",
    "COMPUTE_STREAM",
    "COPY_STREAM",
    "Category",
    "CollectiveNames",
    "SyncKind",
]

# --- Host execution trace ---------------------------------------------------------------------

MODERN_SCHEMA = "1.1.1-chakra.0.0.4"
LEGACY_SCHEMA = "1.0.1"
MODERN_PROCESS_ROOT = "[pytorch|profiler|execution_trace|process]"
MODERN_THREAD_ROOT = "[pytorch|profiler|execution_trace|thread]"
LEGACY_PROCESS_ROOT = "[pytorch|profiler|execution_graph|process]"
LEGACY_THREAD_ROOT = "[pytorch|profiler|execution_graph|thread]"
PROCESS_GROUP_INIT = "## process_group:init ##"
RECORD_PARAM_COMMS = "record_param_comms"
PROFILER_STEP = "ProfilerStep#{}"
#: Prefix of the autograd engine's record function around each backward node.
EVALUATE_FUNCTION = "autograd::engine::evaluate_function: "

#: RecordScope values PyTorch writes into the host ET ``scope`` attr.
SCOPE_FUNCTION = 0
SCOPE_BACKWARD_FUNCTION = 1
SCOPE_USER = 7

# --- Streams -----------------------------------------------------------------------------------

COMPUTE_STREAM = 7  # Kineto's number for the legacy default stream
COPY_STREAM = 13
DEFAULT_PG_STREAM = 20
SUBGROUP_STREAM = 24

# --- CUDA runtime and driver calls -------------------------------------------------------------

#: CUPTI callback ids, as real traces show them in ``args.cbid``.
CBID = {
    "cudaLaunchKernel": 211,
    "cudaLaunchKernelExC": 430,
    "cuLaunchKernel": 307,
    "cudaMemcpy": 31,
    "cudaMemcpyAsync": 41,
    "cudaMemsetAsync": 51,
    "cudaEventRecord": 135,
    "cudaStreamWaitEvent": 147,
    "cudaEventSynchronize": 137,
    "cudaStreamSynchronize": 131,
    "cudaDeviceSynchronize": 165,
}
API_CATEGORY = {name: Category.CUDA_RUNTIME for name in CBID}
API_CATEGORY["cuLaunchKernel"] = Category.CUDA_DRIVER

MEMCPY_HTOD = "Memcpy HtoD (Pinned -> Device)"
MEMCPY_DTOH_PINNED = "Memcpy DtoH (Device -> Pinned)"
MEMCPY_DTOH_PAGEABLE = "Memcpy DtoH (Device -> Pageable)"
MEMCPY_DTOD = "Memcpy DtoD (Device -> Device)"
MEMSET_DEVICE = "Memset (Device)"
#: DDP's record function around copying an all-reduced bucket back into the gradients.
DDP_COPY_BUCKET = "torch.distributed.ddp.reducer::copy_bucket_to_grad"

# --- Collectives -------------------------------------------------------------------------------

_NCCL_ARGS = "(ncclDevKernelArgsStorage<4096ul>)"


class CollectiveNames:
    """How one collective kind is spelt on the host (c10d op, annotation) and on the GPU."""

    __slots__ = ("c10d", "collective_name", "kernel", "nccl", "schema")

    def __init__(self, c10d: str, nccl: str, collective_name: str, kernel: str, schema: str):
        self.c10d = c10d
        self.nccl = nccl
        self.collective_name = collective_name
        self.kernel = kernel + _NCCL_ARGS
        self.schema = schema


_WORK = "__torch__.torch.classes.c10d.Work"
_PG = "__torch__.torch.classes.c10d.ProcessGroup"

#: Collective kind (as in the truth files) -> names.
COLLECTIVES = {
    "all_reduce": CollectiveNames(
        "c10d::allreduce_", "nccl:all_reduce", "allreduce",
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
        f"c10d::allreduce_(Tensor[] tensors, {_PG} process_group, "
        f"__torch__.torch.classes.c10d.ReduceOp reduce_op, Tensor? sparse_indices, "
        f"int timeout) -> (Tensor[], {_WORK})",
    ),
    "all_gather": CollectiveNames(
        "c10d::allgather_", "nccl:all_gather", "allgather", "ncclDevKernel_AllGather_RING_LL",
        f"c10d::allgather_(Tensor[][] output_tensors, Tensor[] input_tensors, {_PG} "
        f"process_group, int timeout) -> (Tensor[][], {_WORK})",
    ),
    "reduce_scatter": CollectiveNames(
        "c10d::reduce_scatter_", "nccl:reduce_scatter", "reduce_scatter",
        "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL",
        f"c10d::reduce_scatter_(Tensor[] output_tensors, Tensor[][] input_tensors, {_PG} "
        f"process_group, __torch__.torch.classes.c10d.ReduceOp reduce_op, int timeout) -> "
        f"(Tensor[], {_WORK})",
    ),
    "all_to_all": CollectiveNames(
        "c10d::alltoall_base_", "nccl:all_to_all", "all_to_all", "ncclDevKernel_SendRecv",
        f"c10d::alltoall_base_(Tensor output, Tensor input, {_PG} process_group, "
        f"int[] output_split_sizes, int[] input_split_sizes, int timeout) -> {_WORK}",
    ),
    "broadcast": CollectiveNames(
        "c10d::broadcast_", "nccl:broadcast", "broadcast", "ncclDevKernel_Broadcast_RING_LL",
        f"c10d::broadcast_(Tensor[] tensors, {_PG} process_group, int root_rank, "
        f"int root_tensor, bool asyncOp, int timeout) -> (Tensor[], {_WORK})",
    ),
    "send": CollectiveNames(
        "c10d::send", "nccl:send", "send", "ncclDevKernel_SendRecv",
        f"c10d::send(Tensor[] tensors, {_PG} process_group, int dstRank, int tag) -> {_WORK}",
    ),
    "recv": CollectiveNames(
        "c10d::recv_", "nccl:recv", "recv", "ncclDevKernel_SendRecv",
        f"c10d::recv_(Tensor[] tensors, {_PG} process_group, int srcRank, int tag) -> {_WORK}",
    ),
}  # fmt: skip


#: Bus-traffic factor per kind for a group of ``n`` (NCCL's ring algorithm bandwidth model).
def traffic_factor(kind: str, group_size: int) -> float:
    """Bytes on the wire per byte of message, for ``kind`` in a group of ``group_size``."""
    n = max(group_size, 1)
    if kind == "all_reduce":
        return 2.0 * (n - 1) / n
    if kind in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0


# --- Kineto header -----------------------------------------------------------------------------

GPUS_PER_NODE = 8
NCCL_VERSION = "2.21.5"


def device_properties() -> list[dict]:
    """``deviceProperties`` as Kineto writes it for a node of H100 GPUs."""
    return [
        {
            "id": index,
            "name": "NVIDIA H100 80GB HBM3",
            "totalGlobalMem": 85045166080,
            "computeMajor": 9,
            "computeMinor": 0,
            "maxThreadsPerBlock": 1024,
            "maxThreadsPerMultiprocessor": 2048,
            "regsPerBlock": 65536,
            "warpSize": 32,
            "sharedMemPerBlock": 49152,
            "numSms": 132,
            "regsPerMultiprocessor": 65536,
            "sharedMemPerBlockOptin": 232448,
            "sharedMemPerMultiprocessor": 233472,
        }
        for index in range(GPUS_PER_NODE)
    ]
