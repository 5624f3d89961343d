"""Get and set Chakra ``AttributeProto`` values by name, whatever kind the writer chose.

Attributes are a list of ``AttributeProto`` on a ``Node`` or the ``GlobalMetadata``; each
holds one member of the ``value`` oneof. Writers disagree on the member for the same name
(``comm_size`` is ``int64_val`` in some versions, ``uint64_val`` in others), so readers here
accept every integer kind, and setters use the conventional kind of :data:`ATTRIBUTE_KINDS`.
Lookups scan the attribute list (nodes carry a handful), O(attributes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional, Union

from chakra.errors import AttributeKindError
from chakra.et.schema import INTEGER_VALUE_KINDS, VALUE_KINDS, AttributeProto

#: Oneof members holding one integer.
INTEGER_KINDS = frozenset(f"{kind}_val" for kind in INTEGER_VALUE_KINDS)
#: Oneof members holding a list.
LIST_KINDS = frozenset(f"{kind}_list" for kind in VALUE_KINDS)

#: The oneof member each well-known attribute is written with (reference §2.5).
ATTRIBUTE_KINDS: Mapping[str, str] = {
    "is_cpu_op": "bool_val",
    "num_ops": "int64_val",
    "tensor_size": "uint64_val",
    "comm_type": "int64_val",
    "comm_size": "int64_val",
    "comm_priority": "int32_val",
    "comm_src": "int32_val",
    "comm_dst": "int32_val",
    "comm_tag": "int32_val",
    "pg_name": "string_val",
    "stream": "int64_val",
    "rf_id": "int64_val",
    "fw_parent": "int64_val",
    "seq_id": "int64_val",
    "scope": "int64_val",
    "tid": "int64_val",
    "fw_tid": "int64_val",
    "op_schema": "string_val",
    "involved_dim": "bool_list",
    # GlobalMetadata attributes written by the converters.
    "schema": "string_val",
    "pid": "uint64_val",
    "time": "string_val",
    "start_ts": "uint64_val",
    "finish_ts": "uint64_val",
    "input_file": "string_val",
    "contradictions": "string_val",  # chakra.et.contradictions
    "rank": "uint64_val",  # the global rank of the trace (chakra.simulate.rank_order)
}

AttrValue = Union[bool, int, float, str, bytes, Sequence[Any]]
_MISSING: Any = object()


def find_attr(message: Any, name: str) -> Optional[Any]:
    """Return the first attribute called ``name`` of a Node or GlobalMetadata, or None."""
    for attr in message.attr:
        if attr.name == name:
            return attr
    return None


def attr_kind(attr: Any) -> Optional[str]:
    """The oneof member set on ``attr`` (e.g. ``"int64_val"``), or None when none is set."""
    return attr.WhichOneof("value")


def attr_value(attr: Any) -> Optional[AttrValue]:
    """The Python value of ``attr``: a scalar, a list for ``*_list`` kinds, None if unset."""
    kind = attr.WhichOneof("value")
    if kind is None:
        return None
    value = getattr(attr, kind)
    return list(value.values) if kind in LIST_KINDS else value


def get_attr(message: Any, name: str, default: Any = None) -> Any:
    """The value of attribute ``name`` (see :func:`attr_value`), or ``default`` if absent."""
    attr = find_attr(message, name)
    return default if attr is None else attr_value(attr)


def _checked(message: Any, name: str, default: Any, accepted: frozenset, wanted: str) -> Any:
    attr = find_attr(message, name)
    if attr is None:
        return default
    kind = attr.WhichOneof("value")
    if kind not in accepted:
        owner = f"node {message.id}" if hasattr(message, "id") else "the GlobalMetadata"
        raise AttributeKindError(
            f"attribute {name!r} of {owner} holds {kind or 'no value'}, not {wanted}"
        )
    return getattr(attr, kind)


def get_int_attr(message: Any, name: str, default: Any = None) -> Any:
    """Attribute ``name`` as an int, from any integer kind (or ``bool_val``)."""
    value = _checked(message, name, _MISSING, INTEGER_KINDS | {"bool_val"}, "an integer")
    return default if value is _MISSING else int(value)


def get_bool_attr(message: Any, name: str, default: Any = None) -> Any:
    """Attribute ``name`` as a bool, from ``bool_val`` or any integer kind (non-zero is true)."""
    value = _checked(message, name, _MISSING, INTEGER_KINDS | {"bool_val"}, "a boolean")
    return default if value is _MISSING else bool(value)


def get_str_attr(message: Any, name: str, default: Any = None) -> Any:
    """Attribute ``name`` as a str (``string_val``)."""
    value = _checked(message, name, _MISSING, frozenset({"string_val"}), "a string")
    return default if value is _MISSING else value


def infer_kind(value: AttrValue) -> str:
    """The oneof member a Python value is stored in when its name has no convention."""
    scalar_kinds = (
        (bool, "bool"),
        (int, "int64"),
        (float, "double"),
        (str, "string"),
        (bytes, "bytes"),
    )
    for python_type, kind in scalar_kinds:
        if isinstance(value, python_type):
            return f"{kind}_val"
    if isinstance(value, (list, tuple)):
        element = infer_kind(value[0]) if value else "int64_val"
        return element.replace("_val", "_list")
    raise AttributeKindError(f"cannot store a {type(value).__name__} in an attribute")


def _assign(attr: Any, name: str, value: AttrValue, kind: Optional[str]) -> Any:
    """Store ``value`` in ``attr`` under ``kind`` (default: the convention for ``name``)."""
    kind = kind or ATTRIBUTE_KINDS.get(name) or infer_kind(value)
    try:
        if kind in LIST_KINDS:
            field = getattr(attr, kind)
            del field.values[:]
            field.values.extend(value)  # type: ignore[arg-type]
        else:
            setattr(attr, kind, value)
    except (TypeError, ValueError, AttributeError) as exc:
        raise AttributeKindError(f"cannot store {value!r} as {kind} in {name!r}: {exc}") from exc
    return attr


def make_attr(name: str, value: AttrValue, kind: Optional[str] = None) -> Any:
    """Build an ``AttributeProto``; ``kind`` defaults to the convention for ``name``."""
    return _assign(AttributeProto(name=name), name, value, kind)


def set_attr(message: Any, name: str, value: AttrValue, kind: Optional[str] = None) -> None:
    """Set attribute ``name`` on a Node or GlobalMetadata, replacing one already there.

    ``kind`` is a oneof member such as ``"uint64_val"`` or ``"int32_list"``; by default the
    convention of :data:`ATTRIBUTE_KINDS`, else one inferred from the Python type. A value
    that does not fit the kind raises :class:`AttributeKindError` and leaves ``message`` as
    it was.
    """
    existing = find_attr(message, name)
    if existing is not None:
        existing.CopyFrom(make_attr(name, value, kind))
    else:
        add_attr(message, name, value, kind)


def add_attr(message: Any, name: str, value: AttrValue, kind: Optional[str] = None) -> None:
    """Append attribute ``name`` without looking for an existing one: the fast way to fill a
    message being built (``set_attr`` replaces, at the cost of a scan per call)."""
    added = message.attr.add(name=name)
    try:
        _assign(added, name, value, kind)
    except AttributeKindError:
        del message.attr[-1]
        raise
