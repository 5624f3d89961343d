"""Match host ops with the Kineto CPU ops that recorded them (the first linking step).

Strategies are tried in order and the first that explains the trace serves:
1. Kineto ``Record function id`` == host ``rf_id`` (PyTorch 2.x);
2. Kineto ``External id`` == host ``rf_id`` with equal names (older PyTorch);
3. program order: per thread, host ops by id against Kineto ops by ``External id``
   (``program_order.py``; 1.0.1-era traces whose ids are different counters);
4. order-preserving alignment of op names per thread, choosing the Kineto iteration that
   matches the host ET best (the last resort: it orders Kineto ops by time).
Every match is then verified (``verify.py``): the names agree and the nesting agrees with the
host ET's; the rest are rejected and counted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Optional, Union

import msgspec

from chakra.errors import ChakraError
from chakra.ingest.device_model import DeviceTrace, KinetoEvent, ProfilerStep
from chakra.ingest.host_model import HostOp, HostTrace
from chakra.ingest.kineto_host import StepChoice, choose_step
from chakra.ingest.vocabulary import PROCESS_GROUP_INIT_NAME, PROCESS_ROOT_NAMES, THREAD_ROOT_NAMES
from chakra.link.alignment import align_from, best_windows
from chakra.link.linked_trace import JoinStrategy, LinkOptions, LinkWindow, WindowChoice
from chakra.link.nesting import program_order_key
from chakra.link.program_order import join_by_program_order
from chakra.link.verify import verify_matches

#: Names of the host ops no Kineto trace records (HostOp.is_process_root, is_thread_root).
_UNLINKABLE_NAMES = PROCESS_ROOT_NAMES | THREAD_ROOT_NAMES | {PROCESS_GROUP_INIT_NAME}
#: A strategy serves when it matches at least this share of the host ops it could match.
MIN_SHARE = 0.5
ThreadKey = tuple[Union[int, str], Union[int, str]]


class CpuJoin(msgspec.Struct, frozen=True):
    """Host op id -> (Kineto event, strategy) for verified matches; the time window linked
    (None: whole trace); notes on what was guessed; matches rejected by verification (by
    strategy); host ops that ran on another thread than their host parent; host ops whose
    exact id was trusted over a stale host parent (placed where Kineto shows them)."""

    matches: dict[int, tuple[KinetoEvent, JoinStrategy]]
    window: Optional[LinkWindow]
    notes: tuple[str, ...] = ()
    rejected: dict[str, int] = {}
    other_thread: frozenset[int] = frozenset()
    reparented: frozenset[int] = frozenset()


def kineto_cpu_events(device: DeviceTrace) -> list[KinetoEvent]:
    """CPU ops plus ProfilerStep annotations (host ETs record those steps as nodes too)."""
    return [*device.cpu_ops, *(step.event for step in device.steps)]


def linkable_host_ops(host: HostTrace) -> list[HostOp]:
    """Host ops that Kineto can have recorded: everything but the process and thread roots
    and the process-group table (written when the observer starts)."""
    return [op for op in host.ops if op.name not in _UNLINKABLE_NAMES]


def join_cpu_ops(host: HostTrace, device: DeviceTrace, options: LinkOptions) -> CpuJoin:
    """Match host ops with Kineto CPU ops (the first strategy that serves), then verify."""
    join = _first_serving_join(host, device, options)
    checked = verify_matches(host.ops, join.matches)
    notes = list(join.notes)
    rejected = sum(checked.rejected.values())
    if rejected:
        notes.append(
            f"{rejected} host op matches rejected: the Kineto op does not nest where the "
            "host ET says the op ran (those ops are left untimed)"
        )
    return msgspec.structs.replace(
        join,
        matches=checked.accepted,
        notes=tuple(notes),
        rejected=checked.rejected,
        other_thread=checked.other_thread,
        reparented=checked.reparented,
    )


def _first_serving_join(host: HostTrace, device: DeviceTrace, options: LinkOptions) -> CpuJoin:
    events = kineto_cpu_events(device)
    window = _step_window(device.steps, options.profiler_step)
    if window is not None:
        events = [e for e in events if window.contains(e.ts_us or 0)]
    ops = linkable_host_ops(host)
    for strategy, key in ((JoinStrategy.RECORD_FUNCTION_ID, _rf_id_key),
                          (JoinStrategy.EXTERNAL_ID, _external_id_key)):  # fmt: skip
        matches = _join_by_id(ops, events, key, strategy)
        if ops and len(matches) >= MIN_SHARE * len(ops):
            matched = [event for event, _ in matches.values()]
            return CpuJoin(matches=matches, window=window or _host_span(matched))
    ordered = join_by_program_order(ops, events, options.iteration)
    if ops and len(ordered.matches) >= MIN_SHARE * len(ops):
        strategy = JoinStrategy.PROGRAM_ORDER
        matches = {host_id: (event, strategy) for host_id, event in ordered.matches.items()}
        window = window or _host_span(list(ordered.matches.values()), *ordered.choice)
        return CpuJoin(matches=matches, window=window, notes=ordered.notes)
    return _join_by_alignment(ops, events, options, window)


def _host_span(matched: Sequence[KinetoEvent], pick: int = 0, count: int = 1) -> LinkWindow:
    """The span of what the host ET recorded: from the first matched op's start to the last
    one's end; ``pick`` of ``count`` equally matching iterations."""
    start, end = min(e.ts_us or 0 for e in matched), max(e.end_us for e in matched)
    return LinkWindow(WindowChoice.HOST_SPAN, start, end, iteration=pick, candidates=count)


def _step_window(steps: Sequence[ProfilerStep], choice: StepChoice) -> Optional[LinkWindow]:
    step = choose_step(steps, choice)
    if step is None:
        return None
    return LinkWindow(WindowChoice.PROFILER_STEP, step.ts_us, step.end_us, step=step.number)


def _rf_id_key(event: KinetoEvent) -> Optional[int]:
    return event.rf_id or None


def _external_id_key(event: KinetoEvent) -> Optional[int]:
    return event.external_id


def _join_by_id(ops: Iterable[HostOp], events: Iterable[KinetoEvent], key, strategy) -> dict:
    """Join on a unique id; ids carried by several Kineto events are ambiguous and skipped.
    The External id strategy also requires equal names (its ids are a different counter)."""
    by_id: dict[int, KinetoEvent] = {}
    repeated: set[int] = set()  # (a Counter's misses are Python calls: 37k of them here)
    for event in events:
        value = key(event)
        if value is not None:
            if value in by_id:
                repeated.add(value)
            by_id[value] = event
    matches = {}
    for op in ops:
        event = by_id.get(op.rf_id) if op.rf_id else None
        if event is None or op.rf_id in repeated:
            continue
        if strategy is JoinStrategy.EXTERNAL_ID and event.name != op.name:
            continue
        matches[op.id] = (event, strategy)
    return matches


def _join_by_alignment(ops, events, options, window: Optional[LinkWindow]) -> CpuJoin:
    host_threads: dict[int, list[HostOp]] = defaultdict(list)
    for op in ops:
        host_threads[op.tid].append(op)
    kineto_threads: dict[ThreadKey, list[KinetoEvent]] = defaultdict(list)
    for event in sorted(events, key=program_order_key):
        kineto_threads[(event.pid, event.tid)].append(event)
    # The thread that recorded first (smallest host id) defines the iteration's window.
    order = sorted(host_threads, key=lambda tid: host_threads[tid][0].id)
    matches: dict[int, tuple[KinetoEvent, JoinStrategy]] = {}
    notes: list[str] = []
    span: Optional[tuple[float, float]] = None
    chosen = (0, 1)
    used: set[ThreadKey] = set()
    for tid in order:
        host_ops = host_threads[tid]
        names = [op.name for op in host_ops]
        choice = _best_thread(names, kineto_threads, used, span, options, notes)
        if choice is None:
            continue
        thread, kineto_ops, alignment, rank_of_choice = choice
        if span is None:
            chosen = rank_of_choice
        used.add(thread)
        for h, k in alignment.pairs:
            matches[host_ops[h].id] = (kineto_ops[k], JoinStrategy.NAME_ALIGNMENT)
        if span is None:
            matched = [kineto_ops[k] for _, k in alignment.pairs]
            span = (min(e.ts_us or 0 for e in matched), max(e.end_us for e in matched))
            span = (span[0], _next_start(kineto_ops, alignment, span[1]))
    if window is None and span is not None:
        window = LinkWindow(
            WindowChoice.ALIGNED_ITERATION,
            span[0],
            span[1],
            iteration=chosen[0],
            candidates=chosen[1],
        )
    return CpuJoin(matches=matches, window=window, notes=tuple(notes))


def _next_start(kineto_ops, alignment, end) -> float:
    """End of the chosen iteration: where the next repetition of its first op starts."""
    first_index = alignment.pairs[0][1]
    name = kineto_ops[first_index].name
    for event in kineto_ops[alignment.pairs[-1][1] + 1 :]:
        if event.name == name and (event.ts_us or 0) >= end:
            return event.ts_us or 0
    return end


def _best_thread(names, kineto_threads, used, span, options, notes):
    """The Kineto thread that aligns best with one host thread's op names: ``(thread, its
    events considered, alignment (indices into those events), (pick, equally good count))``,
    or None."""
    best = None
    for thread, kineto_ops in kineto_threads.items():
        if thread in used:
            continue
        if span is not None:  # secondary threads: stay inside the chosen iteration
            kineto_ops = [e for e in kineto_ops if span[0] <= (e.ts_us or 0) < span[1]]
        kineto_names = [e.name for e in kineto_ops]
        windows = best_windows(names, kineto_names)
        if windows and (best is None or windows.score > best[1].score):
            best = (thread, windows, kineto_ops, kineto_names)
    if best is None:
        return None
    thread, windows, view, view_names = best
    primary = span is None  # only the first thread chooses; the others follow its window
    pick = options.iteration if primary and options.iteration is not None else 0
    count = len(windows.starts)
    if pick >= count:
        raise ChakraError(f"--iteration {pick}: only {count} equally good windows")
    if primary and count > 1 and options.iteration is None:
        notes.append(
            f"{count} Kineto iterations match the host ET equally well; linked the "
            f"first (choose another with --iteration N)"
        )
    alignment = align_from(names, view_names, windows.starts[pick])
    return thread, view, alignment, (pick, count)
