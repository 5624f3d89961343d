"""A host execution trace made from a Kineto trace alone: for the profiles people already
have, which carry the CPU op stack of every thread but no host ET.

Each Kineto thread with ``cpu_op``/``user_annotation`` events (and the ``ProfilerStep#N``
annotations) becomes a thread of a synthetic host ET: a process root (id 1), a thread root
per thread, then one host op per event, its parent the innermost event of the same thread
that encloses it (by time; equal starts: the longer one encloses). Ids follow start time,
so a parent's id is below its children's and program order is id order, as in a recorded
host ET. Each op keeps the event's ``Record function id`` as ``rf_id`` (the linker then
joins each op to its own event, exactly), its ``Sequence number`` and ``Fwd thread id``,
its input shapes and types when the profile recorded them (``record_shapes=True``), and a
``record_param_comms`` op its collective (name, message sizes, dtype, process group). The
``distributedInfo`` process groups become a ``## process_group:init ##`` op, as a host ET
records them.

What a Kineto trace does not hold is not made up: no tensor ids or values, so no data
dependencies between host ops beyond nesting and thread order (:data:`LOST`).
"""

from __future__ import annotations

import statistics
from collections import defaultdict, deque
from collections.abc import Sequence
from typing import Optional, Union

import msgspec

from chakra.errors import ChakraError, TraceFormatError
from chakra.ingest.device_model import DeviceTrace, KinetoEvent, ProfilerStep
from chakra.ingest.host_model import CommAttrs, HostOp, HostTrace, OpArgs, SchemaVersion
from chakra.ingest.vocabulary import PROCESS_GROUP_INIT_NAME, RECORD_PARAM_COMMS_NAME

#: The schema the synthetic host ET says it is (1.1.1 layout).
SCHEMA = "1.1.1-chakra.0.0.4"
#: ``HostTrace.source`` of a host ET made here.
KINETO_SOURCE = "kineto"
#: What a host side made from Kineto lacks, said in the trace's notes and the link report.
LOST = (
    "no tensor ids or values, so no data dependencies between host ops beyond nesting and "
    "thread order"
)
NO_SHAPES = "no input shapes (the profile was recorded without record_shapes)"
PROCESS_ROOT = "[pytorch|profiler|execution_trace|process]"
THREAD_ROOT = "[pytorch|profiler|execution_trace|thread]"
#: Collectives a worker thread runs, enqueued by the ``c10d::*`` op of another thread.
WORKER_COLLECTIVE, C10D = "gloo:", "c10d::"
#: Which ProfilerStep to keep: a step number, :data:`LAST_STEP`, :data:`ALL_STEPS` or None.
StepChoice = Union[int, str, None]
LAST_STEP, ALL_STEPS = "last", "all"
#: A last step shorter than this share of the others' median was cut short by the stop.
CUT_SHORT = 0.25
ThreadKey = tuple[Union[int, str], Union[int, str]]


def _order_key(event: KinetoEvent) -> tuple[float, float]:
    """Start, then the longer first: an enclosing op precedes what it encloses."""
    return (float(event.ts_us or 0), -float(event.dur_us))


def _host_events(device: DeviceTrace) -> list[KinetoEvent]:
    """The CPU ops and the ProfilerStep annotations, in start order."""
    return sorted([*device.cpu_ops, *(step.event for step in device.steps)], key=_order_key)


def _inputs(event: KinetoEvent) -> OpArgs:
    """The event's input shapes and types (``record_shapes``), without values."""
    dims, types = event.args.input_dims, event.args.input_types
    if not isinstance(dims, list) and not isinstance(types, list):
        return OpArgs()
    return OpArgs.of(
        [], dims if isinstance(dims, list) else [], types if isinstance(types, list) else []
    )


def _comm(event: KinetoEvent) -> Optional[CommAttrs]:
    """A ``record_param_comms`` event's collective, as the host ET's attrs say it."""
    args = event.args
    if event.name != RECORD_PARAM_COMMS_NAME or args.collective_name is None:
        return None
    return CommAttrs(
        collective_name=args.collective_name,
        dtype=args.dtype,
        in_msg_nelems=args.in_msg_nelems,
        out_msg_nelems=args.out_msg_nelems,
        in_split_size=args.in_split_size,
        out_split_size=args.out_split_size,
        global_rank_start=args.global_rank_start,
        global_rank_stride=args.global_rank_stride,
        pg_name=None if args.pg_name is None else str(args.pg_name),
        pg_desc=args.pg_desc,
        pg_size=args.group_size,
    )


def _group_table(device: DeviceTrace, op_id: int, parent_id: int, tid: int) -> Optional[HostOp]:
    """The ``distributedInfo`` process groups as a host ET's ``process_group:init`` op."""
    info = device.distributed
    if info is None or not info.pg_config:
        return None
    table = [
        {"pg_name": str(g.pg_name), "pg_desc": g.pg_desc, "backend_config": g.backend_config,
         "ranks": list(g.ranks) if isinstance(g.ranks, list) else [], "group_size": g.pg_size}
        for g in info.pg_config
    ]  # fmt: skip
    text = msgspec.json.encode(table).decode()
    return HostOp(op_id, PROCESS_GROUP_INIT_NAME, parent_id, None, tid=tid,
                  inputs=OpArgs.of([text], [[]], ["String"]))  # fmt: skip


def _collective_kind(name: str) -> str:
    """``c10d::allreduce_`` and ``gloo:all_reduce`` alike: ``allreduce``."""
    return name.split(":")[-1].strip("_").replace("_", "")


def _enqueuing_ops(events: list[KinetoEvent]) -> tuple[dict[int, KinetoEvent], int]:
    """For each top-level ``gloo:*`` op that a worker thread ran, the ``c10d::*`` op of
    another thread that enqueued it (keyed by ``id(event)``), and how many of those were
    found by order alone. PyTorch opens the worker's record function inside the enqueuing
    op, so its record-function id is that op's plus one (a host ET files it under that op);
    a profile without an execution-trace observer writes 0 for every id, and then (only
    then) the worker's queue order serves: the k-th worker op of a kind belongs to the k-th
    ``c10d::`` op of that kind (the first that started before it and is not taken)."""
    callers = [e for e in events if e.name.startswith(C10D)]
    by_rf = {e.args.rf_id: e for e in callers if e.args.rf_id}
    queues: dict[str, deque[KinetoEvent]] = defaultdict(deque)
    for caller in callers:  # in start order
        queues[_collective_kind(caller.name)].append(caller)
    taken: set[int] = set()
    found, by_order = {}, 0
    for event in events:
        if not event.name.startswith(WORKER_COLLECTIVE):
            continue
        caller = by_rf.get(event.args.rf_id - 1) if event.args.rf_id else None
        if not event.args.rf_id:
            queue = queues[_collective_kind(event.name)]
            while queue and id(queue[0]) in taken:
                queue.popleft()
            if queue and _order_key(queue[0]) <= _order_key(event):
                caller, by_order = queue[0], by_order + 1
        if caller is not None and caller.tid != event.tid and id(caller) not in taken:
            found[id(event)] = caller
            taken.add(id(caller))
    return found, by_order


def _event_op(event: KinetoEvent, op_id: int, parent_id: int, tid: int) -> HostOp:
    args = event.args
    return HostOp(op_id, event.name, parent_id, args.rf_id, tid=tid,
                  seq_id=args.sequence_number if args.sequence_number is not None else -1,
                  fw_tid=args.fwd_thread_id or 0, inputs=_inputs(event),
                  comm=_comm(event))  # fmt: skip


def last_complete_step(steps: Sequence[ProfilerStep]) -> ProfilerStep:
    """The step with the highest number, or the one before when that one was cut short:
    under :data:`CUT_SHORT` of the median of the others (the profiler opens a step at each
    ``step()`` and closes the last one as it stops: 49 µs against 9,288 µs in the shared
    AMD MI250 trace)."""
    ordered = sorted(steps, key=lambda step: step.number)
    if len(ordered) >= 2:
        usual = statistics.median(float(s.event.dur_us) for s in ordered[:-1])
        if float(ordered[-1].event.dur_us) < CUT_SHORT * usual:
            return ordered[-2]
    return ordered[-1]


def choose_step(steps: Sequence[ProfilerStep], choice: StepChoice) -> Optional[ProfilerStep]:
    """The ``ProfilerStep#N`` that ``choice`` names: a number, ``"last"`` (the last
    complete step: the steady state, where the first is usually warm-up), or ``"all"``/None
    (no step: the whole trace; also ``"last"`` on a trace without steps). Raises
    ChakraError for a number the trace does not have, naming those it has."""
    if choice is None or choice == ALL_STEPS or (choice == LAST_STEP and not steps):
        return None
    if choice == LAST_STEP:
        return last_complete_step(steps)
    step = next((s for s in steps if s.number == choice), None)
    if step is None:
        shown = ", ".join(str(s.number) for s in steps) or "none"
        raise ChakraError(f"ProfilerStep#{choice} is not in the Kineto trace (steps: {shown})")
    return step


def host_trace_from_kineto(device: DeviceTrace, step: Optional[ProfilerStep] = None) -> HostTrace:
    """The synthetic host ET of ``device`` (see the module documentation); with a ``step``,
    of the CPU ops that start within it only. Linear in the events, plus one sort."""
    events = _host_events(device)
    if step is not None:
        events = [e for e in events if step.ts_us <= (e.ts_us or 0) <= step.end_us]
    if not device.cpu_ops:
        raise TraceFormatError(
            device.path,
            "no CPU ops (cpu_op or user_annotation events), so no host side can be made "
            "from this Kineto trace alone: profile with the CPU activity "
            "(torch.profiler.ProfilerActivity.CPU), or give its host execution trace",
        )
    threads: dict[ThreadKey, int] = {}
    for event in events:
        threads.setdefault((event.pid, event.tid), len(threads) + 1)
    ops = [HostOp(1, PROCESS_ROOT, 1, None)]
    roots = {}
    for thread, number in threads.items():
        roots[thread] = len(ops) + 1
        ops.append(HostOp(roots[thread], THREAD_ROOT, 1, None, tid=number))
    table = _group_table(device, len(ops) + 1, 2 if threads else 1, 1)
    if table is not None:
        ops.append(table)
    stacks: dict[ThreadKey, list[tuple[float, int]]] = defaultdict(list)
    shapes = False
    enqueued, by_order = _enqueuing_ops(events)
    op_of: dict[int, int] = {}
    handed_over: set[int] = set()  # ops filed under their enqueuer on another thread
    for event in events:
        thread = (event.pid, event.tid)
        stack, begin = stacks[thread], float(event.ts_us or 0)
        while stack and stack[-1][0] <= begin:  # ended by the time this one starts
            stack.pop()
        parent = stack[-1][1] if stack else roots[thread]
        if parent in handed_over:  # as a host ET files a worker's own ops: under its root
            parent = roots[thread]
        caller = op_of.get(id(enqueued[id(event)])) if id(event) in enqueued else None
        if not stack and caller is not None:
            parent = caller
            handed_over.add(len(ops) + 1)
        ops.append(_event_op(event, len(ops) + 1, parent, threads[thread]))
        op_of[id(event)] = len(ops)
        shapes = shapes or event.args.input_dims is not None
        stack.append((float(event.end_us), len(ops)))
    pid = None  # the threads may come from several processes (Triton compiles in one)
    notes = [f"host side made from the Kineto trace: {LOST}", *(() if shapes else (NO_SHAPES,))]
    if by_order:
        notes.append(f"{by_order} gloo collectives filed under the c10d op that enqueued them "
                     "by queue order (the trace has no record-function ids)")  # fmt: skip
    return HostTrace(device.path, SCHEMA, SchemaVersion(1, 1, 1, (0, 0, 4)), pid, None, None,
                     None, tuple(ops), notes=tuple(notes), source=KINETO_SOURCE)  # fmt: skip
