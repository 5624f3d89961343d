"""Compact ``args`` of Kineto events, one class per kind of event.

A full :class:`~chakra.ingest.device_model.KinetoArgs` has a slot for every key the
toolchain reads (29 of them, 240 bytes), although each kind of event carries only a few: a
kernel its ``External id``, ``correlation``, ``device`` and ``stream``; a CPU op its
``External id``, ``Record function id``, ``Ev Idx``... The loader keeps, for each event, the
smallest class below that holds every key the event has; an event with a key outside its
kind's class (an NCCL kernel's collective fields, say) keeps a full ``KinetoArgs``.

Every class answers every ``KinetoArgs`` attribute: the keys it does not hold are class
attributes set to None, so ``event.args.pg_name`` reads None on a plain kernel.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional, Union

import msgspec
from msgspec import field

from chakra.ingest.device_model import NO_ARGS, KinetoArgs
from chakra.ingest.vocabulary import Category


class CompactArgs(msgspec.Struct, frozen=True, gc=False, forbid_unknown_fields=True):
    """Base of the compact classes: every ``KinetoArgs`` attribute, None unless a subclass
    holds it as a field. Decoding JSON with another key fails: see :class:`ArgsDecoder`."""


# Why: the compact classes keep a loaded trace near its file's size (the "kept" column of
# benchmarks/ingest_throughput.py); these class attributes let them stand for KinetoArgs.
for _name in KinetoArgs.__struct_fields__:
    setattr(CompactArgs, _name, None)


class CpuOpArgs(CompactArgs, frozen=True, gc=False):
    """``cpu_op`` and ``user_annotation`` events."""

    external_id: Optional[int] = field(default=None, name="External id")
    rf_id: Optional[int] = field(default=None, name="Record function id")
    ev_idx: Optional[int] = field(default=None, name="Ev Idx")
    sequence_number: Optional[int] = field(default=None, name="Sequence number")
    fwd_thread_id: Optional[int] = field(default=None, name="Fwd thread id")
    input_dims: Any = field(default=None, name="Input Dims")  # with record_shapes
    input_types: Any = field(default=None, name="Input type")


class RuntimeArgs(CompactArgs, frozen=True, gc=False):
    """``cuda_runtime`` and ``cuda_driver`` calls (HIP names a copy's ``stream``).

    Five slots, not four: a four-slot struct is the size of the ``msgspec.Raw`` views that
    the loader frees as it goes, and would pin their memory pages (pymalloc keeps a page
    for one size of object while any of its blocks is in use)."""

    external_id: Optional[int] = field(default=None, name="External id")
    correlation: Optional[int] = None
    cbid: Optional[int] = None
    stream: Union[int, str, None] = None
    device: Optional[int] = None


class GpuOpArgs(CompactArgs, frozen=True, gc=False):
    """``kernel``, ``gpu_memcpy``, ``gpu_memset`` and ``gpu_user_annotation`` events."""

    external_id: Optional[int] = field(default=None, name="External id")
    correlation: Optional[int] = None
    device: Optional[int] = None
    stream: Union[int, str, None] = None
    nbytes: Optional[int] = field(default=None, name="bytes")
    copy_kind: Union[str, int, None] = field(default=None, name="kind")


class SyncArgs(CompactArgs, frozen=True, gc=False):
    """``cuda_sync`` events (CUPTI synchronization records)."""

    external_id: Optional[int] = field(default=None, name="External id")
    correlation: Optional[int] = None
    device: Optional[int] = None
    stream: Union[int, str, None] = None
    sync_kind: Optional[str] = field(default=None, name="cuda_sync_kind")
    wait_on_stream: Optional[int] = None
    wait_on_event_correlation: Optional[int] = field(
        default=None, name="wait_on_cuda_event_record_corr_id"
    )
    wait_on_event_id: Optional[int] = field(default=None, name="wait_on_cuda_event_id")


COMPACT_ARGS: dict[str, type[CompactArgs]] = {
    Category.CPU_OP: CpuOpArgs,
    Category.USER_ANNOTATION: CpuOpArgs,
    Category.CUDA_RUNTIME: RuntimeArgs,
    Category.CUDA_DRIVER: RuntimeArgs,
    Category.KERNEL: GpuOpArgs,
    Category.GPU_USER_ANNOTATION: GpuOpArgs,
    Category.GPU_MEMCPY: GpuOpArgs,
    Category.GPU_MEMSET: GpuOpArgs,
    Category.CUDA_SYNC: SyncArgs,
}


class ArgsDecoder(NamedTuple):
    """How to decode the raw ``args`` of one kind of event (see :func:`decode_args`).

    ``strict`` decodes args that hold only keys of the kind's compact class (the usual case,
    one pass) and raises ``msgspec.ValidationError`` on any other key; ``lenient`` decodes
    any args, exactly: the compact class when the event has no other ``KinetoArgs`` key, a
    full ``KinetoArgs`` otherwise, the shared ``NO_ARGS`` when it has no key read."""

    strict: Callable[[msgspec.Raw], Any]
    lenient: Callable[[msgspec.Raw], Any]


def args_decoder(compact: Optional[type[CompactArgs]]) -> ArgsDecoder:
    """The :class:`ArgsDecoder` of the events whose compact class is ``compact``; None: of
    the events that keep a full ``KinetoArgs``."""
    decode_full = msgspec.json.Decoder(KinetoArgs, strict=False).decode

    def full(raw: msgspec.Raw) -> KinetoArgs:
        args = decode_full(raw)
        return NO_ARGS if args == NO_ARGS else args

    if compact is None:
        return ArgsDecoder(full, full)
    held = msgspec.structs.fields(compact)
    decode_held = msgspec.json.Decoder(_without_checks(compact, held), strict=False).decode
    other_fields = [
        f for f in msgspec.structs.fields(KinetoArgs) if f.name not in compact.__struct_fields__
    ]
    others = _without_checks(compact, other_fields, "_Not")
    decode_others, none_other = msgspec.json.Decoder(others, strict=False).decode, others()
    astuple = msgspec.structs.astuple

    def lenient(raw: msgspec.Raw) -> Any:
        values = astuple(decode_held(raw))
        if decode_others(raw) != none_other:
            return full(raw)
        return NO_ARGS if values.count(None) == len(values) else compact(*values)

    return ArgsDecoder(msgspec.json.Decoder(compact, strict=False).decode, lenient)


def _without_checks(compact: type, fields: Any, prefix: str = "_Any") -> type:
    """A struct of ``fields`` that ignores every other key (for the lenient decode)."""
    return msgspec.defstruct(
        f"{prefix}{compact.__name__}",
        [(f.name, f.type, field(default=None, name=f.encode_name)) for f in fields],
        frozen=True,
        gc=False,
    )


def decode_args(decoder: ArgsDecoder, raw: msgspec.Raw) -> Any:
    """``raw``, an event's ``args``, decoded as ``decoder`` says (the loader inlines this,
    falling back to ``lenient`` for good once strict decoding of a kind often fails)."""
    try:
        return decoder.strict(raw)
    except msgspec.ValidationError:
        return decoder.lenient(raw)


class _OldExternalId(msgspec.Struct, gc=False):
    value: Optional[int] = field(default=None, name="external id")


_decode_old_external_id = msgspec.json.Decoder(_OldExternalId, strict=False).decode


def legacy_args_decoder(decoder: ArgsDecoder) -> ArgsDecoder:
    """``decoder`` for the events of an older Kineto (categories ``Runtime``, ``Kernel``,
    ``Memcpy``...), which write the external id of runtime calls and GPU ops as
    ``external id``, in lower case (their operators keep ``External id``); the
    ``correlation`` key is the same. Always lenient: these traces are small, and the
    lower-case key would make every strict decode fail."""
    lenient = decoder.lenient

    def decode(raw: msgspec.Raw) -> Any:
        args = lenient(raw)
        if args.external_id is None:
            old = _decode_old_external_id(raw).value
            if old is not None:
                return msgspec.structs.replace(args, external_id=old)
        return args

    return ArgsDecoder(decode, decode)


class LabelArgs(msgspec.Struct, gc=False):
    """The ``args`` of a metadata (``M``) event: only its ``name`` is read."""

    label: Optional[str] = field(default=None, name="name")
