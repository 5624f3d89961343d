"""Serialized pieces of a ``Node`` (attribute entries, inputs/outputs), built without message
objects: the fast path of large conversions.

Protobuf parses a message's repeated fields by appending, so a node built from its scalar
fields and then given ``MergeFromString(b"".join(pieces))`` equals one built field by field
(and serializes to the same bytes). Building the pieces here costs a dictionary lookup for
the values that repeat (thread ids, schemas, flags) and a varint for the rest, instead of a
message construction per attribute. ``tests/et/test_node_fields.py`` checks every piece
against protobuf's own serialization.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any, Union

from chakra.et.framing import SMALL_VARINT_LIMIT, SMALL_VARINTS, encode_varint

# Node fields: id = 1, name = 2, type = 3 (varint), ctrl_deps = 4, data_deps = 5 (packed),
# start_time_micros = 6, duration_micros = 7 (varints).
_ID_TAG, _NAME_FIELD_TAG, _TYPE_TAG = b"\x08", b"\x12", b"\x18"
_CTRL_TAG, _DATA_TAG, _START_TAG, _DURATION_TAG = b"\x22", b"\x2a", b"\x30", b"\x38"
# Node fields: inputs = 8, outputs = 9 (IOInfo), attr = 10 (AttributeProto); length-delimited.
_INPUTS_TAG, _OUTPUTS_TAG, _ATTR_TAG = b"\x42", b"\x4a", b"\x52"
# AttributeProto: name = 1 (string), int64_val = 9 (varint), bool_val = 27 (varint),
# string_val = 29 (string).
_NAME_TAG, _INT64_TAG, _BOOL_TAG, _STRING_TAG = b"\x0a", b"\x48", b"\xd8\x01", b"\xea\x01"
_UINT64_MASK = (1 << 64) - 1
BytesLike = Union[bytes, Any]  # bytes, or an object with the buffer protocol (msgspec.Raw)
_CACHE_LIMIT = 1 << 16
_SMALL_NEGATIVES = 64
#: The varints of -64..-1 as int64 (two's complement on 64 bits), at their value's index
#: from the end (index -1 holds -1's).
_NEGATIVE_VARINTS = [
    encode_varint((n - _SMALL_NEGATIVES) & _UINT64_MASK) for n in range(_SMALL_NEGATIVES)
]


def remember(
    cache: MutableMapping[Any, bytes], key: Any, piece: bytes, limit: int = _CACHE_LIMIT
) -> bytes:
    """Store ``piece`` under ``key`` in a cache of at most ``limit`` entries (emptied when
    full: the pieces that repeat come back at once) and return it."""
    if len(cache) >= limit:
        cache.clear()
    cache[key] = piece
    return piece


def _delimited(tag: bytes, payload: bytes) -> bytes:
    return tag + encode_varint(len(payload)) + payload


def _named(name: str) -> bytes:
    return _delimited(_NAME_TAG, name.encode())


def int64_attr(name: str, value: int) -> bytes:
    """``attr { name: name, int64_val: value }`` (negative values as protobuf writes them)."""
    return _delimited(_ATTR_TAG, _named(name) + _INT64_TAG + encode_varint(value & _UINT64_MASK))


def bool_attr(name: str, value: bool) -> bytes:
    return _delimited(_ATTR_TAG, _named(name) + _BOOL_TAG + (b"\x01" if value else b"\x00"))


def string_attr(name: str, value: str) -> bytes:
    return _delimited(_ATTR_TAG, _named(name) + _delimited(_STRING_TAG, value.encode()))


def io_info(outputs: bool, values: BytesLike, shapes: BytesLike, types: BytesLike) -> bytes:
    """``inputs``/``outputs`` with the JSON text of values, shapes and types (an empty text
    is left out, as protobuf leaves out a field holding its default); bytes or any object
    holding them (a ``msgspec.Raw``: not copied first)."""
    body = b""
    if values:
        body += b"\x0a" + encode_varint(len(values)) + values
    if shapes:
        body += b"\x12" + encode_varint(len(shapes)) + shapes
    if types:
        body += b"\x1a" + encode_varint(len(types)) + types
    return (_OUTPUTS_TAG if outputs else _INPUTS_TAG) + encode_varint(len(body)) + body


class AttrPieces:
    """Serialized attribute entries: ``int64`` from the encoded name of each attr with the
    entry's length byte for each value length (no cache: a lookup and a concatenation cost
    less than keying one, and unique values such as record-function ids would only fill it);
    ``boolean`` and ``string`` remembered for the (name, value) pairs seen before (up to a
    bound)."""

    def __init__(self) -> None:
        self._cache: dict[tuple, bytes] = {}
        self._int_heads: dict[str, list[bytes]] = {}

    def int64(self, name: str, value: int) -> bytes:
        heads = self._int_heads.get(name)
        if heads is None:
            heads = self._int_heads[name] = _int64_heads(name)
        if 0 <= value < SMALL_VARINT_LIMIT:
            encoded = SMALL_VARINTS[value]
        else:
            encoded = encode_varint(value & _UINT64_MASK)
        return heads[len(encoded)] + encoded

    def boolean(self, name: str, value: bool) -> bytes:
        key = (name, bool, value)
        piece = self._cache.get(key)
        return piece if piece is not None else remember(self._cache, key, bool_attr(name, value))

    def string(self, name: str, value: str) -> bytes:
        key = (name, str, value)
        piece = self._cache.get(key)
        return piece if piece is not None else remember(self._cache, key, string_attr(name, value))


def int64_entries(names: Sequence[str]) -> Callable[[Mapping[str, Any]], bytes]:
    """A function giving the ``int64`` attr entries of those of ``names`` whose value in a
    mapping is an int (not a bool), in the order of ``names``: once per node, with the
    encoded names computed here once (a call per entry costs more than the entry)."""
    heads = [(name, _int64_heads(name)) for name in names]

    def entries(values: Mapping[str, Any]) -> bytes:
        out = b""
        get = values.get
        for name, head in heads:
            value = get(name)
            if value.__class__ is int:
                if 0 <= value < SMALL_VARINT_LIMIT:
                    encoded = SMALL_VARINTS[value]
                elif -_SMALL_NEGATIVES <= value < 0:  # seq_id -1: ten bytes, each time
                    encoded = _NEGATIVE_VARINTS[value]
                else:
                    encoded = encode_varint(value & _UINT64_MASK)
                out += head[len(encoded)] + encoded
        return out

    return entries


def _int64_heads(name: str) -> list[bytes]:
    """``attr``'s tag and length and the entry's name and value tag, by the length of the
    encoded value (1 to 10 bytes; index 0 unused)."""
    named = _named(name) + _INT64_TAG
    return [_ATTR_TAG + encode_varint(len(named) + size) + named for size in range(11)]


class NodeHeads:
    """The serialized scalar and dependency fields of a ``Node`` (fields 1 to 7); a node's
    message is its head followed by its pieces (inputs, outputs, then attrs), which is the
    order protobuf serializes them in. Encoded names are remembered (up to a bound)."""

    def __init__(self) -> None:
        self._names: dict[tuple[str, int], bytes] = {}  # name and type

    def head(
        self,
        node_id: int,
        name: str,
        node_type: int,
        ctrl_deps: Sequence[int],
        data_deps: Sequence[int],
        start_us: int,
        duration_us: int,
    ) -> bytes:
        """Fields at their default (0, empty) are left out, as protobuf leaves them out.
        Every number must be non-negative (``node_type`` too)."""
        named = self._names.get((name, node_type))
        if named is None:
            named = _delimited(_NAME_FIELD_TAG, name.encode()) if name else b""
            if node_type:
                named += _TYPE_TAG + encode_varint(node_type)
            remember(self._names, (name, node_type), named)
        # small numbers (lengths, most durations) indexed inline: a call each costs more
        small, limit, varint = SMALL_VARINTS, SMALL_VARINT_LIMIT, encode_varint
        head = _ID_TAG + varint(node_id) + named if node_id else named
        if ctrl_deps:
            packed = b"".join(map(varint, ctrl_deps))
            head += (
                _CTRL_TAG + small[len(packed)] + packed
                if len(packed) < limit
                else (_CTRL_TAG + varint(len(packed)) + packed)
            )
        if data_deps:
            packed = b"".join(map(varint, data_deps))
            head += (
                _DATA_TAG + small[len(packed)] + packed
                if len(packed) < limit
                else (_DATA_TAG + varint(len(packed)) + packed)
            )
        if start_us:
            head += _START_TAG + varint(start_us)
        if duration_us:
            head += _DURATION_TAG + (
                small[duration_us] if duration_us < limit else varint(duration_us)
            )
        return head
