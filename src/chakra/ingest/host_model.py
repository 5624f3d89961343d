"""Typed, immutable model of a PyTorch host execution trace (host ET).

Values are msgspec ``Struct``s (frozen, slotted): cheap to build from JSON and safe to share
between stages. Op arguments stay raw JSON until asked for (see :class:`OpArgs`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional

import msgspec

from chakra.ingest.vocabulary import (
    PROCESS_GROUP_INIT_NAME,
    PROCESS_ROOT_NAMES,
    RECORD_PARAM_COMMS_NAME,
    THREAD_ROOT_NAMES,
)


class TensorRef(msgspec.Struct, frozen=True, gc=False):
    """One tensor argument: the 6-element ``[tensor_id, storage_id, offset, numel,
    itemsize, device]`` encoding of host ETs."""

    tensor_id: int
    storage_id: int
    offset: int
    num_elements: int
    element_bytes: int
    device: str

    @property
    def nbytes(self) -> int:
        return self.num_elements * self.element_bytes


_END = object()


def _is_tensor_value(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 6
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value[:5])
        and isinstance(value[5], str)
    )


def _tensors_in(value: Any, type_name: str) -> Iterator[TensorRef]:
    """Walk ``value`` guided by ``type_name`` (``Tensor(float)``, ``GenericList[...]``,
    ``Tuple[...]``, nested to any depth) and yield its tensors."""
    if "Tensor" not in type_name:
        return
    if type_name.startswith("Tensor") and _is_tensor_value(value):
        yield TensorRef(*value)
        return
    if isinstance(value, list):
        stack = [iter(value)]
        while stack:  # explicit stack of iterators: in order, no recursion on deep nesting
            item = next(stack[-1], _END)
            if item is _END:
                stack.pop()
            elif _is_tensor_value(item):
                yield TensorRef(*item)
            elif isinstance(item, list):
                stack.append(iter(item))


_NULL_JSON = msgspec.Raw(b"null")
_EMPTY_ARGS_JSON = msgspec.Raw(b'{"values":[],"shapes":[],"types":[]}')


def _args_object(
    values: msgspec.Raw, shapes: msgspec.Raw, types: msgspec.Raw, strides: Optional[msgspec.Raw]
) -> msgspec.Raw:
    """The compact ``{"values", "shapes", "types"[, "strides"]}`` object of raw lists. Raw is
    a buffer, joined without copies (once per tensor list of every host op written to ET+;
    benchmarks/run_all.py, link column)."""
    text = [b'{"values":', values, b',"shapes":', shapes, b',"types":', types]
    if strides is not None:
        text += [b',"strides":', strides]
    text.append(b"}")
    return msgspec.Raw(b"".join(text))


class _ArgParts(msgspec.Struct, gc=False):
    """The lists of an ``inputs``/``outputs`` object, each left as raw JSON."""

    values: msgspec.Raw = msgspec.Raw(b"[]")
    shapes: msgspec.Raw = msgspec.Raw(b"[]")
    types: msgspec.Raw = msgspec.Raw(b"[]")
    strides: msgspec.Raw = msgspec.Raw(b"null")  # msgspec cannot decode Optional[Raw]


class _ArgLists(msgspec.Struct, gc=False):
    """The lists of an ``inputs``/``outputs`` object, decoded."""

    values: Any = []
    shapes: Any = []
    types: Any = []
    strides: Any = None


_PARTS = msgspec.json.Decoder(_ArgParts)
_LISTS = msgspec.json.Decoder(_ArgLists)


class OpArgs(msgspec.Struct, frozen=True, gc=False):
    """Inputs or outputs of an op: parallel lists of values, shapes, types (and strides,
    schema 1.1.1+). Values are raw JSON: tensors in 6-element form, scalars, lists,
    and placeholders such as ``"<None>"``.

    The whole ``{"values": ..., "shapes": ..., "types": ...}`` object is kept as the raw
    JSON text of the file (``json``; one object per op, a view of the file's bytes) and
    decoded on each access to ``values``/``shapes``/``types``/``strides`` (or to their raw
    ``*_json`` forms): most ops' arguments are only copied through to outputs, so this keeps
    memory near the size of the file.
    """

    json: msgspec.Raw = _EMPTY_ARGS_JSON

    @classmethod
    def of(
        cls,
        values: list,
        shapes: Optional[list] = None,
        types: Optional[list] = None,
        strides: Optional[list] = None,
    ) -> OpArgs:
        """OpArgs from Python lists (for tests and generated traces)."""
        lists = {"values": values, "shapes": shapes or [], "types": types or []}
        if strides is not None:
            lists["strides"] = strides
        return cls(msgspec.Raw(msgspec.json.encode(lists)))

    @classmethod
    def from_parts(
        cls,
        values: msgspec.Raw,
        shapes: msgspec.Raw,
        types: msgspec.Raw,
        strides: Optional[msgspec.Raw] = None,
    ) -> OpArgs:
        """OpArgs from separate raw lists (the 1.0.1 layout keeps them in sibling keys)."""
        return cls(_args_object(values, shapes, types, strides))

    def normalized(self) -> msgspec.Raw:
        """The object as ET+ writes it: ``values``, ``shapes``, ``types`` and, when
        present, ``strides``, in that order, compact."""
        parts = self.parts()
        strides = None if parts.strides == _NULL_JSON else parts.strides
        return _args_object(parts.values, parts.shapes, parts.types, strides)

    def parts(self) -> _ArgParts:
        """The four lists as raw JSON (``strides`` is ``null`` when absent)."""
        return _PARTS.decode(self.json)

    @property
    def values_json(self) -> msgspec.Raw:
        return self.parts().values

    @property
    def shapes_json(self) -> msgspec.Raw:
        return self.parts().shapes

    @property
    def types_json(self) -> msgspec.Raw:
        return self.parts().types

    @property
    def strides_json(self) -> Optional[msgspec.Raw]:
        strides = self.parts().strides
        return None if strides == _NULL_JSON else strides

    @property
    def values(self) -> list:
        return _LISTS.decode(self.json).values

    @property
    def shapes(self) -> list:
        return _LISTS.decode(self.json).shapes

    @property
    def types(self) -> list:
        return _LISTS.decode(self.json).types

    @property
    def strides(self) -> Optional[list]:
        return _LISTS.decode(self.json).strides

    def tensors(self) -> Iterator[TensorRef]:
        """Every tensor in the arguments, nested generic lists included, in order; none when
        ``values`` or ``types`` is not a list (an input of ours checks them on loading, see
        :mod:`chakra.ingest.host_checks`; an ET+ written elsewhere may not have)."""
        lists = _LISTS.decode(self.json)
        types = lists.types
        if not isinstance(types, list) or not isinstance(lists.values, list):
            return
        if not any(isinstance(t, str) and "Tensor" in t for t in types):
            return
        for value, type_name in zip(lists.values, types):
            if isinstance(type_name, str):
                yield from _tensors_in(value, type_name)

    def tensor_bytes(self) -> int:
        """Total bytes of all tensors (``numel * itemsize``), counting each once per use."""
        return sum(t.nbytes for t in self.tensors())


class HostAttr(msgspec.Struct, frozen=True, gc=False):
    """An entry of a node's ``attrs`` list: in a host op, one beyond the standard seven; in
    an ET+ node (:mod:`chakra.convert.et_plus_input`), any (``type`` and ``value`` may be
    missing there)."""

    name: str
    type: str = ""
    value: Any = None


class CommAttrs(msgspec.Struct, frozen=True, gc=False):
    """Communication metadata of a ``record_param_comms`` op, from its attrs (schema 1.1.0+)
    or its positional inputs (1.0.1-1.0.4). Fields a vintage does not record are None.
    ``pg_address``: the Int a positional record names its group by (1.0.2: a backend id;
    1.0.1: the group object's address, different on every rank), kept for debugging;
    ``pg_name`` is then the table's name or a canonical one (``host_comms.name_groups``).
    ``pg_rank``: this rank's place in the group (positional records only)."""

    collective_name: Optional[str] = None
    dtype: Optional[str] = None
    in_msg_nelems: Optional[int] = None
    out_msg_nelems: Optional[int] = None
    in_split_size: Any = None
    out_split_size: Any = None
    global_rank_start: Optional[int] = None
    global_rank_stride: Optional[int] = None
    pg_name: Optional[str] = None
    pg_desc: Optional[str] = None
    pg_size: Optional[int] = None
    seq: Optional[int] = None
    pg_address: Optional[int] = None
    pg_rank: Optional[int] = None


#: The attrs every node of a 1.0.2+ host ET carries, and their types (HostOp's fields).
STANDARD_ATTR_TYPES = (
    ("rf_id", "uint64"), ("fw_parent", "uint64"), ("seq_id", "int64"), ("scope", "uint64"),
    ("tid", "uint64"), ("fw_tid", "uint64"), ("op_schema", "string"),
)  # fmt: skip


class HostOp(msgspec.Struct, frozen=True, gc=False):
    """One node of the host ET. ``parent_id`` is the caller (``ctrl_deps`` in 1.0.2+,
    ``parent`` in 1.0.1); the process root is its own parent. ``rf_id`` is the
    record-function id, the join key with Kineto's ``Record function id``."""

    id: int
    name: str
    parent_id: int
    rf_id: Optional[int]
    fw_parent: int = 0
    seq_id: int = -1
    scope: int = 0
    tid: int = 0
    fw_tid: int = 0
    op_schema: str = ""
    inputs: OpArgs = OpArgs()
    outputs: OpArgs = OpArgs()
    attrs: tuple[HostAttr, ...] = ()
    comm: Optional[CommAttrs] = None

    @property
    def is_process_root(self) -> bool:
        return self.name in PROCESS_ROOT_NAMES

    @property
    def is_thread_root(self) -> bool:
        return self.name in THREAD_ROOT_NAMES

    @property
    def is_record_param_comms(self) -> bool:
        return self.name == RECORD_PARAM_COMMS_NAME

    def standard_attrs(self, tid: Optional[int] = None) -> Sequence[HostAttr]:
        """The seven attrs of :data:`STANDARD_ATTR_TYPES` (``rf_id`` 0 when unknown;
        ``tid``: another thread's id, for an op that ran there)."""
        values = (self.rf_id or 0, self.fw_parent, self.seq_id, self.scope,
                  self.tid if tid is None else tid, self.fw_tid, self.op_schema)  # fmt: skip
        return tuple(
            HostAttr(name, kind, value) for (name, kind), value in zip(STANDARD_ATTR_TYPES, values)
        )

    def comm_attrs(self) -> Sequence[HostAttr]:
        """``record_param_comms`` metadata read from positional inputs (schemas before
        1.1.0), as the attrs 1.1.0+ writes, less those the op's attrs already hold: so that
        every consumer finds it in one place."""
        if self.comm is None:
            return ()
        present = {a.name for a in self.attrs}
        return tuple(
            HostAttr(name, "string" if isinstance(value, str) else "uint64", value)
            for name, value in msgspec.structs.asdict(self.comm).items()
            if value is not None and name not in present and not isinstance(value, list)
        )

    def attr(self, name: str, default: Any = None) -> Any:
        """Value of an extra attr (e.g. ``kernel_backend``, ``tensor_range``)."""
        for entry in self.attrs:
            if entry.name == name:
                return entry.value
        return default


class ProcessGroup(msgspec.Struct, frozen=True, gc=False):
    """One process group from ``## process_group:init ##``. Empty ``ranks`` means every rank
    of the job (as PyTorch writes it for the default group)."""

    pg_name: str
    pg_desc: Optional[str] = None
    backend_config: Optional[str] = None
    backend_id: Optional[int] = None
    ranks: tuple[int, ...] = ()
    group_size: Optional[int] = None
    group_count: Optional[int] = None


class SchemaVersion(msgspec.Struct, frozen=True, order=True, gc=False):
    """A host ET schema string such as ``1.1.1-chakra.0.0.4``, split into numbers."""

    major: int
    minor: int
    patch: int
    chakra: tuple[int, ...] = ()

    def __str__(self) -> str:
        base = f"{self.major}.{self.minor}.{self.patch}"
        return f"{base}-chakra.{'.'.join(map(str, self.chakra))}" if self.chakra else base


class HostTrace(msgspec.Struct, frozen=True, gc=False):
    """A loaded host ET. ``ops`` are sorted by id. ``notes`` says what the loader had to
    guess (e.g. an unknown schema version read as a known layout)."""

    path: str
    schema: str
    version: SchemaVersion
    pid: Optional[int]
    time: Optional[str]
    start_ts: Optional[int]
    finish_ts: Optional[int]
    ops: tuple[HostOp, ...]
    process_groups: tuple[ProcessGroup, ...] = ()
    notes: tuple[str, ...] = ()
    #: where the host side came from: a recorded host ET (``host_et``), or made from the
    #: Kineto trace alone (``kineto``: :mod:`chakra.ingest.kineto_host`)
    source: str = "host_et"

    def op_by_id(self) -> Mapping[int, HostOp]:
        """A fresh id → op map (O(n))."""
        return {op.id: op for op in self.ops}

    def thread_roots(self) -> tuple[HostOp, ...]:
        return tuple(op for op in self.ops if op.is_thread_root)

    def process_group_init(self) -> Optional[HostOp]:
        return next((op for op in self.ops if op.name == PROCESS_GROUP_INIT_NAME), None)

    @property
    def thread_ids(self) -> tuple[int, ...]:
        """Distinct ``tid`` values of the ops, sorted."""
        return tuple(sorted({op.tid for op in self.ops if not op.is_process_root}))
