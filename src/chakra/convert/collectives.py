"""What a communication op is (collective type, or point-to-point) and how many bytes it moves.

Host metadata speaks first (``record_param_comms`` collective name, ``nccl:*`` and ``c10d::*``
op names), then Kineto's ``Collective name`` of the kernel, then the kernel's name (NCCL and
RCCL spell them alike). An NCCL kernel nobody can type is a best guess with a warning, never
an abort.
"""

from __future__ import annotations

import enum
import re
from typing import Optional

from chakra.et.schema import CollectiveCommType

C = CollectiveCommType


class PointToPoint(enum.Enum):
    SEND = "send"
    RECV = "recv"


CommKind = "CollectiveCommType | PointToPoint"

#: Normalised names (lower case, no ``_``/``-``, no ``c10d::``/``nccl:``/``gloo:``) -> kind.
#: Longest names first, so that ``allreduce`` wins over ``reduce``.
_NAMES = {
    "reducescattertensorcoalesced": C.REDUCE_SCATTER, "reducescattertensor": C.REDUCE_SCATTER,
    "reducescatterbase": C.REDUCE_SCATTER, "reducescattersingle": C.REDUCE_SCATTER,
    "reducescatterblock": C.REDUCE_SCATTER_BLOCK, "reducescatter": C.REDUCE_SCATTER,
    "allgatherintotensorcoalesced": C.ALL_GATHER, "allgatherintotensor": C.ALL_GATHER,
    "allgathercoalesced": C.ALL_GATHER, "allgatherbase": C.ALL_GATHER,
    "allgathersingle": C.ALL_GATHER, "allgather": C.ALL_GATHER,
    "allreducecoalesced": C.ALL_REDUCE, "allreduce": C.ALL_REDUCE,
    "alltoallbase": C.ALL_TO_ALL, "alltoallsingle": C.ALL_TO_ALL, "alltoallv": C.ALL_TO_ALL,
    "alltoall": C.ALL_TO_ALL, "broadcast": C.BROADCAST, "reduce": C.REDUCE,
    "gather": C.GATHER, "scatter": C.SCATTER, "barrier": C.BARRIER,
    "send": PointToPoint.SEND, "isend": PointToPoint.SEND,
    "recv": PointToPoint.RECV, "irecv": PointToPoint.RECV, "recvanysource": PointToPoint.RECV,
}  # fmt: skip
_BY_LENGTH = sorted(_NAMES, key=len, reverse=True)
_PREFIX = re.compile(r"^(c10d::|nccl:|gloo:|rccl:|_)+")

#: Bytes per element of the dtype names PyTorch writes in comm metadata.
DTYPE_BYTES = {
    "float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2,
    "bfloat16": 2, "int": 4, "int32": 4, "long": 8, "int64": 8, "short": 2, "int16": 2,
    "char": 1, "int8": 1, "byte": 1, "uint8": 1, "bool": 1, "complexfloat": 8,
    "complexdouble": 16, "complexhalf": 4, "float8_e4m3fn": 1, "float8_e5m2": 1,
}  # fmt: skip


def normalise(name: str) -> str:
    return _PREFIX.sub("", name.strip().lower()).replace("_", "").replace("-", "")


def kind_from_name(name: Optional[str], *, exact: bool = True) -> Optional[object]:
    """The kind a collective/op name denotes; ``exact`` requires the whole (normalised) name
    to be a known one, otherwise the longest known name it contains wins (kernel names).
    A value that is no string (an attribute written with another type) names nothing."""
    if not name or not isinstance(name, str):
        return None
    key = normalise(name)
    if exact:
        return _NAMES.get(key)
    for known in _BY_LENGTH:
        if known in key:
            return _NAMES[known]
    return None


def kernel_kind(kernel_name: str) -> Optional[object]:
    """The kind an NCCL/RCCL kernel name shows (``ncclDevKernel_AllGather_RING_LL`` ->
    ALL_GATHER). ``SendRecv`` kernels are ambiguous (send, recv, all_to_all): None."""
    base = kernel_name.split("(")[0]
    key = normalise(base.replace("ncclDevKernel", "").replace("ncclKernel", ""))
    if "sendrecv" in key:
        return None
    return kind_from_name(key, exact=False)


def dtype_bytes(dtype: Optional[str]) -> Optional[int]:
    """Bytes per element of a dtype name (None: unknown, or no string)."""
    if not dtype or not isinstance(dtype, str):
        return None
    return DTYPE_BYTES.get(dtype.lower().replace("torch.", ""))
