"""How a rank issues a collective: message sizes, the modelled fabric's transfer time, and the
actions of an NCCL collective (``c10d::`` op, ``record_param_comms``, ``nccl:`` annotation,
kernel, stream hand-offs). Timing-free, like :mod:`chakra.synth.program`."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from chakra.synth.options import scale_ns
from chakra.synth.records import (
    CollectiveCall,
    EventRecord,
    Launch,
    OpBegin,
    OpEnd,
    ProcessGroup,
    StreamWait,
)
from chakra.synth.vocabulary import (
    COLLECTIVES,
    COMPUTE_STREAM,
    RECORD_PARAM_COMMS,
    SCOPE_USER,
    Category,
    traffic_factor,
)

_US = 1000  # ns per µs
_END = OpEnd()
#: Link bandwidth (bytes per ns, i.e. GB/s) and per-collective latency of the modelled fabric.
LINK_BYTES_PER_NS = 150
COLLECTIVE_LATENCY_NS = 8 * _US

_MESSAGE_NELEMS = {
    "all_reduce": 1 << 21,
    "all_gather": 1 << 19,
    "reduce_scatter": 1 << 20,
    "all_to_all": 1 << 19,
    "broadcast": 1 << 10,
    "send_recv": 1 << 18,
}


def transfer_ns(kind: str, nelems: int, group_size: int, network_factor: float = 1.0) -> int:
    """Time a collective moves data once its last member has started (bandwidth model:
    latency plus bytes on the wire over link bandwidth, both times ``network_factor``)."""
    wire = nelems * 4 * traffic_factor(kind, group_size)
    return scale_ns(COLLECTIVE_LATENCY_NS + int(wire / LINK_BYTES_PER_NS), network_factor)


def collective_call(
    kind: str, group: ProcessGroup, seq: int, network_factor: float
) -> CollectiveCall:
    """Collective ``kind`` (``send``/``recv`` for a point-to-point pair) number ``seq`` of
    ``group``, with its message sizes and transfer time."""
    n = len(group.ranks)
    job_kind = "send_recv" if kind in ("send", "recv") else kind
    base = _MESSAGE_NELEMS[job_kind]
    in_n, out_n = base, base
    if kind == "all_gather":
        out_n = base * n
    elif kind == "reduce_scatter":
        in_n, out_n = base * n, base
    return CollectiveCall(
        kind=kind,
        job_kind=job_kind,
        pg=group,
        seq=seq,
        ranks=group.ranks,
        in_nelems=in_n,
        out_nelems=out_n,
        transfer_ns=transfer_ns(kind, in_n, n, network_factor),
    )


def collective_actions(
    call: CollectiveCall, rank: int, next_event: Callable[[], int], wait: bool, after: int = 0
) -> Iterator[object]:
    """``c10d::<op>`` -> ``record_param_comms`` -> ``nccl:<op>`` -> NCCL kernel, with the
    stream hand-offs ProcessGroupNCCL makes: the NCCL stream waits for the compute stream
    before the kernel; event ``after`` (from ``next_event`` when 0) is recorded on the NCCL
    stream after it, and with ``wait`` the compute stream waits for that event at once."""
    names = COLLECTIVES[call.kind]
    n = len(call.ranks)
    tensor = ("GenericList[Tensor(float)]", ((call.in_nelems,),))
    start = call.ranks[0]
    positional = (
        tensor, ("Int", call.seq), ("Tuple[String,String]", [call.pg.name, call.pg.desc]),
        ("Int", call.ranks.index(rank)), ("String", names.collective_name),
        ("GenericList[]", []), ("GenericList[]", []), ("Int", start), ("Int", 1), ("Int", n),
    )  # fmt: skip
    before = next_event()
    after = after or next_event()
    yield OpBegin(names.c10d, schema=names.schema, inputs=(tensor,))
    yield OpBegin(RECORD_PARAM_COMMS, inputs=positional, comm=call)
    yield EventRecord(COMPUTE_STREAM, before)
    yield StreamWait(call.pg.stream, before)
    yield OpBegin(
        names.nccl,
        Category.USER_ANNOTATION,
        inputs=(("Tensor(float)", (call.in_nelems,)),),
        scope=SCOPE_USER,
    )
    yield Launch(
        "cudaLaunchKernelExC", Category.KERNEL, names.kernel, call.pg.stream, 0, call.nbytes, call
    )
    yield _END
    yield EventRecord(call.pg.stream, after)
    yield _END
    yield _END
    if wait:
        yield StreamWait(COMPUTE_STREAM, after)
