"""A host execution trace made from a Kineto trace alone (issue 33, first step): for the
profiles people already have, which carry the CPU op stack of every thread but no host ET.

Each Kineto thread with ``cpu_op``/``user_annotation`` events (and the ``ProfilerStep#N``
annotations) becomes a thread of a synthetic host ET: a process root (id 1), a thread root
per thread, then one host op per event, its parent the innermost event of the same thread
that encloses it (by time; equal starts: the longer one encloses). Ids follow start time,
so a parent's id is below its children's and program order is id order, as in a recorded
host ET. Each op keeps the event's ``Record function id`` as ``rf_id`` (the linker then
joins each op to its own event, exactly), its ``Sequence number`` and ``Fwd thread id``.

What a Kineto trace does not hold is not made up: no tensor ids or values (so no data
dependencies between host ops beyond nesting and thread order), no input shapes (the
loader keeps none yet), no process-group table (collectives keep what their events say).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Union

from chakra.ingest.device_model import DeviceTrace, KinetoEvent
from chakra.ingest.host_model import HostOp, HostTrace, SchemaVersion

#: The schema the synthetic host ET says it is (1.1.1 layout; ``kineto`` marks its source).
SCHEMA = "1.1.1-chakra.0.0.4"
PROCESS_ROOT = "[pytorch|profiler|execution_trace|process]"
THREAD_ROOT = "[pytorch|profiler|execution_trace|thread]"
ThreadKey = tuple[Union[int, str], Union[int, str]]


def _order_key(event: KinetoEvent) -> tuple[float, float]:
    """Start, then the longer first: an enclosing op precedes what it encloses."""
    return (float(event.ts_us or 0), -float(event.dur_us))


def _host_events(device: DeviceTrace) -> list[KinetoEvent]:
    """The CPU ops and the ProfilerStep annotations, in start order."""
    return sorted([*device.cpu_ops, *(step.event for step in device.steps)], key=_order_key)


def host_trace_from_kineto(device: DeviceTrace) -> HostTrace:
    """The synthetic host ET of ``device`` (see the module documentation). Linear in the
    events, plus one sort."""
    events = _host_events(device)
    threads: dict[ThreadKey, int] = {}
    for event in events:
        threads.setdefault((event.pid, event.tid), len(threads) + 1)
    ops = [HostOp(1, PROCESS_ROOT, 1, None)]
    roots = {}
    for thread, number in threads.items():
        roots[thread] = len(ops) + 1
        ops.append(HostOp(roots[thread], THREAD_ROOT, 1, None, tid=number))
    stacks: dict[ThreadKey, list[tuple[float, int]]] = defaultdict(list)
    for event in events:
        thread = (event.pid, event.tid)
        stack, begin = stacks[thread], float(event.ts_us or 0)
        while stack and stack[-1][0] <= begin:  # ended by the time this one starts
            stack.pop()
        op_id = len(ops) + 1
        parent = stack[-1][1] if stack else roots[thread]
        args = event.args
        ops.append(HostOp(op_id, event.name, parent, args.rf_id, tid=threads[thread],
                          seq_id=args.sequence_number if args.sequence_number is not None else -1,
                          fw_tid=args.fwd_thread_id or 0))  # fmt: skip
        stack.append((float(event.end_us), op_id))
    pid = None  # the threads may come from several processes (Triton compiles in one)
    return HostTrace(device.path, SCHEMA, SchemaVersion(1, 1, 1, (0, 0, 4)), pid, None, None,
                     None, tuple(ops),
                     notes=("host side made from the Kineto trace: no tensor ids, shapes or "
                            "data dependencies between host ops",))  # fmt: skip
