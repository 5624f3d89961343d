"""Load a Kineto device trace (``.json`` or ``.json.gz``) into a :class:`DeviceTrace`.

Memory: the document is first decoded with ``traceEvents`` as raw JSON views, then each event
on its own, so that no list of fat intermediate events ever exists. Equal strings (phases,
categories, names) and process/thread ids are shared between events, and each event keeps
the compact ``args`` of its kind (:mod:`chakra.ingest.device_args`). The file's bytes are
released as soon as the last event is decoded.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from itertools import compress, count, islice
from operator import attrgetter, eq
from typing import Literal, Optional, Union

import msgspec
from msgspec import field

from chakra.errors import PathLike, TraceFormatError
from chakra.ingest.device_args import (
    COMPACT_ARGS,
    NO_ARGS,
    ArgsDecoder,
    LabelArgs,
    args_decoder,
    legacy_args_decoder,
)
from chakra.ingest.device_flows import FlowColumns
from chakra.ingest.device_model import (
    DeviceProperties,
    DeviceTrace,
    DistributedInfo,
    KinetoEvent,
    ProfilerStep,
)
from chakra.ingest.event_limits import LIMIT as _LIMIT
from chakra.ingest.event_limits import timing_error as _range_error
from chakra.ingest.json_input import (
    decode_element,
    decode_or_raise,
    describe_decode_error,
    gc_paused,
    read_json_bytes,
    top_level_keys,
)
from chakra.ingest.vocabulary import (
    CPU_OP_CATEGORIES,
    GPU_OP_CATEGORIES,
    PROFILER_STEP_PREFIX,
    RUNTIME_CATEGORIES,
    Category,
    modern_category,
)
from chakra.progress import Progress, phase

logger = logging.getLogger(__name__)
WHAT = "Kineto trace"
_STEP_NUMBER = re.compile(r"ProfilerStep#(\d+)")
_STEP_DIGITS = 19  # 2^63 has 19 digits
_TIMED_PHASES = frozenset({"X", "i", "I", "s", "f", "t", "B", "E"})
_OTHER = ("nodes", "host execution trace")
_EMPTY = msgspec.Raw(b"")
_NO_KEYS = msgspec.Raw(b"{}")
# A kind of event whose args often hold keys outside its compact class (kernels: "grid",
# "context"...) is decoded leniently once this many strict decodes, a fifth of all, failed.
_STRICT_TRIES = 32
_START = attrgetter("ts_us")
_DURATION = attrgetter("dur_us")
_UNSEEN = object()  # a category not yet looked up in the routing table


class _RawKinetoTrace(msgspec.Struct, gc=False):
    trace_events: list[msgspec.Raw] = field(name="traceEvents")
    distributed: Optional[DistributedInfo] = field(default=None, name="distributedInfo")
    devices: list[DeviceProperties] = field(default_factory=list, name="deviceProperties")
    trace_name: Optional[str] = field(default=None, name="traceName")
    base_time_ns: Optional[int] = field(default=None, name="baseTimeNanoseconds")
    schema_version: Optional[int] = field(default=None, name="schemaVersion")
    other_kind: msgspec.Raw = field(default=_EMPTY, name=_OTHER[0])


class _RawEvent(KinetoEvent, frozen=True, gc=False):
    """One event as decoded (the fields of :class:`KinetoEvent`), before its strings are
    shared and its args decoded (:mod:`chakra.ingest.device_args`)."""

    args: msgspec.Raw = _EMPTY  # type: ignore[assignment]


_DECODER = msgspec.json.Decoder(_RawKinetoTrace, strict=False)
# Phases and categories of the Chrome trace format and of Kineto: decoded as literals, the
# same string object comes back for every event (msgspec does not share other strings).
_PHASES = ("", "X", "B", "E", "i", "I", "s", "t", "f", "M", "C", "b", "n", "e", "P", "O", "N", "D")
_CATEGORIES = tuple(
    dict.fromkeys(
        (
            "",
            *(v for k, v in vars(Category).items() if not k.startswith("_")),
            "Trace",
            "cuda_profiler_range",
            "overhead",
            "Operator",
            "Runtime",
            "Kernel",
            "Memcpy",
            "Memset",
            "cpu_instant_event",
        )
    )
)


class _KnownEvent(_RawEvent, frozen=True, gc=False):
    """An event whose phase and category are known: both come decoded as shared strings."""

    phase: Literal[_PHASES] = field(default="", name="ph")  # type: ignore[valid-type]
    category: Literal[_CATEGORIES] = field(default="", name="cat")  # type: ignore[valid-type]


_KNOWN_EVENT_DECODER = msgspec.json.Decoder(_KnownEvent, strict=False)
_EVENT_DECODER = msgspec.json.Decoder(_RawEvent, strict=False)
_FULL_EVENT_DECODER = msgspec.json.Decoder(KinetoEvent, strict=False)  # to word errors
_LABEL_DECODER = msgspec.json.Decoder(LabelArgs, strict=False)
_BY_CLASS = {compact: args_decoder(compact) for compact in dict.fromkeys(COMPACT_ARGS.values())}
_ARGS_DECODERS = {category: _BY_CLASS[compact] for category, compact in COMPACT_ARGS.items()}
_FULL_ARGS_DECODER = args_decoder(None)  # categories without a compact class keep every key


def load_device_trace(path: PathLike, data: Optional[bytes] = None) -> DeviceTrace:
    """Load a Kineto trace; gzip is recognised by content.

    Raises :class:`~chakra.errors.TraceFormatError` (one line naming the file) for invalid
    JSON, a file of another kind, a timed event without a numeric ``ts``, or a negative
    duration. A trace without ProfilerStep annotations or flows loads fine. ``data`` is the
    file's decompressed content when the caller has already read it.
    """
    if data is None:
        data = read_json_bytes(path)
    with phase(f"loading Kineto trace {path}", len(data), in_bytes=True) as progress, gc_paused():
        raw = _decode_document(path, data)
        del data  # the raw events keep the bytes alive until they are decoded
        return _organise(path, raw, progress)


def _decode_document(path: PathLike, data: bytes) -> _RawKinetoTrace:
    """:func:`~chakra.ingest.json_input.decode_trace`'s checks and wording, without its
    ``data.strip()``, which copies the whole file when it ends with a newline."""
    if not data or data.isspace():
        raise TraceFormatError(path, f"empty file; expected a {WHAT} JSON document")
    try:
        return decode_or_raise(path, data, _DECODER, WHAT)
    except msgspec.DecodeError as exc:
        key, kind = _OTHER
        if key in top_level_keys(data):
            raise TraceFormatError(path, f"this is a {kind} (it has {key}), not a {WHAT}") from exc
        raise TraceFormatError(path, f"not a valid {WHAT}: {describe_decode_error(exc)}") from exc


def _sorted_by_start(events: list[KinetoEvent]) -> tuple[KinetoEvent, ...]:
    """By (start, longest first), ties in file order: enclosing ops precede what they
    enclose. Sorted by start alone, then the runs of equal starts by duration."""
    events.sort(key=_START)
    starts = list(map(_START, events))
    if any(map(eq, starts, islice(starts, 1, None))):
        _longest_first_within_ties(events, starts)
    return tuple(events)


def _longest_first_within_ties(events: list[KinetoEvent], starts: list) -> None:
    ties = list(compress(count(), map(eq, starts, islice(starts, 1, None))))  # C-level
    end = -1
    for first in ties:
        if first < end:
            continue
        end = first + 2
        while end < len(starts) and starts[end] == starts[first]:
            end += 1
        events[first:end] = sorted(events[first:end], key=_DURATION, reverse=True)


class _Sorted:
    """The events of a trace as they are decoded: CPU ops, runtime calls, GPU ops, CUDA
    syncs and GPU annotations each in their bucket, flows by column, profiler steps, thread
    names, events counted by category, and the older category names met (``aliases``)."""

    def __init__(self) -> None:
        self.cpu: list[KinetoEvent] = []
        self.runtime: list[KinetoEvent] = []
        self.gpu: list[KinetoEvent] = []
        self.sync: list[KinetoEvent] = []
        self.gpu_annotation: list[KinetoEvent] = []
        self.flows = FlowColumns()
        self.steps: list[ProfilerStep] = []
        self.thread_names: list[tuple[Union[int, str], Union[int, str], str]] = []
        self.counts: defaultdict[str, int] = defaultdict(int)
        self.aliases: dict[str, str] = {}  # older or other-case category names met -> today's

    def routes(self) -> dict[str, Optional[tuple]]:
        """Category -> (category, bucket (None: a flow), strict and lenient args decoders)."""
        route = {
            **dict.fromkeys(CPU_OP_CATEGORIES, self.cpu),
            **dict.fromkeys(RUNTIME_CATEGORIES, self.runtime),
            **dict.fromkeys(GPU_OP_CATEGORIES, self.gpu),
            Category.CUDA_SYNC: self.sync,
            Category.GPU_USER_ANNOTATION: self.gpu_annotation,
            Category.AC2G: None,  # flows: stored by column
        }
        return {
            category: (category, bucket, *_ARGS_DECODERS.get(category, _FULL_ARGS_DECODER))
            for category, bucket in route.items()
        }

    def add_thread_name(self, event: _RawEvent) -> None:
        if event.name == "thread_name" and event.args:
            label = _LABEL_DECODER.decode(event.args).label
            if label is not None:
                self.thread_names.append((event.pid, event.tid, label))


def _organise(path: PathLike, raw: _RawKinetoTrace, progress: Progress) -> DeviceTrace:
    """The trace of the raw events, decoded one at a time (``progress`` counts them)."""
    found = _Sorted()
    _sort_events(path, raw, progress, found)
    if not (found.cpu or found.steps or found.runtime or found.gpu):
        raise _nothing_recognised(path, found.counts)
    if found.aliases:
        renamed = ", ".join(f"{old} -> {new}" for old, new in sorted(found.aliases.items()))
        logger.info("%s: category names of an older Kineto read as today's: %s", path, renamed)
    return DeviceTrace(
        path=str(path),
        cpu_ops=_sorted_by_start(found.cpu),
        runtime_calls=_sorted_by_start(found.runtime),
        gpu_ops=_sorted_by_start(found.gpu),
        cuda_syncs=_sorted_by_start(found.sync),
        gpu_annotations=_sorted_by_start(found.gpu_annotation),
        flows=found.flows.finish(),
        steps=tuple(sorted(found.steps, key=lambda s: (s.number, s.ts_us))),
        category_counts=tuple(sorted(found.counts.items())),
        thread_names=tuple(found.thread_names),
        distributed=raw.distributed,
        devices=tuple(raw.devices),
        trace_name=raw.trace_name,
        base_time_ns=raw.base_time_ns,
        schema_version=raw.schema_version,
    )


def _sort_events(path: PathLike, raw: _RawKinetoTrace, progress: Progress, found: _Sorted) -> None:
    """Decode the raw events into ``found``, each freed once decoded (see RuntimeArgs in
    device_args). One loop, lookups in locals: benchmarks/ingest_throughput.py runs here."""
    targets, aliases, counts = found.routes(), found.aliases, found.counts
    cpu, steps = found.cpu, found.steps
    add_flow, failed = found.flows.add, defaultdict(int)  # failed strict args decodes
    share = {}.setdefault  # equal strings and ids, one object each
    timing_error: Optional[TraceFormatError] = None
    decode_known, decode_event = _KNOWN_EVENT_DECODER.decode, _EVENT_DECODER.decode
    raw_events, other_kind = raw.trace_events, bool(raw.other_kind)
    raw.trace_events, raw.other_kind = [], _EMPTY
    raw_events.reverse()  # popped from the end: in file order
    for index in progress.tracked(range(len(raw_events)), len(raw_events), "events"):
        element = raw_events.pop()
        try:
            try:
                event = decode_known(element)
            except msgspec.ValidationError:  # another phase or category, or a real error
                event = decode_event(element)
            category = event.category
            counts[category] += 1
            phase, ts_us, dur_us = event.phase, event.ts_us, event.dur_us
            if not 0 <= dur_us < _LIMIT or not (  # negative, NaN, infinite or >= 2^63
                -_LIMIT < ts_us < _LIMIT if ts_us is not None else phase not in _TIMED_PHASES
            ):
                timing_error = timing_error or _timing_error(path, index, event)
            if phase == "M":
                found.add_thread_name(event)
                continue
            target = targets.get(category, _UNSEEN)
            if target is _UNSEEN:
                target = targets[category] = _alias_target(targets, category, aliases)
            if target is None:
                continue
            category, bucket, decode_args, _ = target
            args = event.args
            if not args or args == _NO_KEYS:
                args = NO_ARGS
            else:  # device_args.decode_args, inlined
                try:
                    args = decode_args(args)
                except msgspec.ValidationError:  # a key outside the compact class
                    args = _lenient_args(targets, target, failed, counts, event.args)
        except msgspec.DecodeError as exc:
            raise _event_error(path, element, index, other_kind) from exc
        name, pid, tid, flow_id = event.name, event.pid, event.tid, event.flow_id
        if bucket is None:  # flows share equal heads by themselves
            add_flow((phase, category, name, pid, tid), ts_us, dur_us, flow_id, args)
            continue
        name, pid, tid = share(name, name), share(pid, pid), share(tid, tid)
        if flow_id is not None:
            flow_id = share(flow_id, flow_id)
        final = KinetoEvent(phase, category, name, pid, tid, ts_us, dur_us, flow_id, args)
        if bucket is cpu and name.startswith(PROFILER_STEP_PREFIX):
            steps.append(_step(path, index, final))
        else:
            bucket.append(final)
    if timing_error is not None:
        raise timing_error


def _lenient_args(
    targets: dict[str, Optional[tuple]],
    target: tuple,
    failed: defaultdict[str, int],
    counts: defaultdict[str, int],
    args: msgspec.Raw,
) -> object:
    """``args`` decoded with every key kept, after the compact class refused one; a category
    whose strict decodes fail often (see :data:`_STRICT_TRIES`) is decoded leniently from
    then on."""
    category, bucket, _, lenient = target
    failed[category] += 1
    if failed[category] > _STRICT_TRIES and failed[category] * 5 > counts[category]:
        targets[category] = (category, bucket, lenient, lenient)
    return lenient(args)


def _alias_target(
    targets: dict[str, Optional[tuple]], category: str, aliases: dict[str, str]
) -> Optional[tuple]:
    """The routing of ``category`` when it is another spelling of a routed category
    (:func:`~chakra.ingest.vocabulary.modern_category`), its args decoded the older way;
    None when it is not routed. Records the alias in ``aliases``."""
    modern = modern_category(category)
    routed = targets.get(modern) if modern is not None and modern != category else None
    if routed is None:
        return None
    aliases[category] = modern  # type: ignore[assignment]
    name, bucket, strict, lenient = routed
    return (name, bucket, *legacy_args_decoder(ArgsDecoder(strict, lenient)))


def _nothing_recognised(path: PathLike, counts: dict[str, int]) -> TraceFormatError:
    """No CPU op, runtime call or GPU op: say which categories the file did hold."""
    if not counts:
        return TraceFormatError(path, "no recognised Kineto events (the trace has no events)")
    seen = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    shown = ", ".join(f"{name or '(no cat)'} {n}" for name, n in seen[:10])
    more = f" and {len(seen) - 10} more" if len(seen) > 10 else ""
    return TraceFormatError(path, f"no recognised Kineto events (categories seen: {shown}{more})")


def _event_error(
    path: PathLike, element: msgspec.Raw, index: int, other_kind: bool
) -> TraceFormatError:
    """The error that decoding the whole document at once would have given for event
    ``index`` (:func:`~chakra.ingest.json_input.decode_trace`'s wording)."""
    if other_kind:
        key, kind = _OTHER
        return TraceFormatError(path, f"this is a {kind} (it has {key}), not a {WHAT}")
    try:
        at_index = [element] * (index + 1)  # decode_element wants the list, reads [index]
        decode_element(path, at_index, index, _FULL_EVENT_DECODER, WHAT, key="traceEvents")
    except TraceFormatError as exc:
        return exc
    return TraceFormatError(path, f"not a valid {WHAT}: event {index} could not be decoded")


def _timing_error(path: PathLike, index: int, event: _RawEvent) -> TraceFormatError:
    if event.ts_us is None and 0 <= event.dur_us < _LIMIT:
        return TraceFormatError(
            path, f"event {index} ({event.name!r}, ph {event.phase!r}) has no 'ts'"
        )
    return _range_error(path, index, event.name, event.ts_us, event.dur_us)


def _step(path: PathLike, index: int, event: KinetoEvent) -> ProfilerStep:
    """The step of a ``ProfilerStep#N`` event (N -1 when not a number); an N of 2^63 or
    more raises TraceFormatError (thousands of digits would not even parse)."""
    match = _STEP_NUMBER.match(event.name)
    if match is None:
        return ProfilerStep(number=-1, event=event)
    digits = match.group(1)
    if len(digits) > _STEP_DIGITS or int(digits) >= 2**63:
        shown = digits if len(digits) <= 24 else f"{digits[:20]}... ({len(digits):,} digits)"
        raise TraceFormatError(
            path, f"event {index} (ProfilerStep#{shown}): the step number is not 0 to 2^63-1"
        )
    return ProfilerStep(number=int(digits), event=event)
