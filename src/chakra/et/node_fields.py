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

from chakra.et.framing import encode_varint

# Node fields: inputs = 8, outputs = 9 (IOInfo), attr = 10 (AttributeProto); length-delimited.
_INPUTS_TAG, _OUTPUTS_TAG, _ATTR_TAG = b"\x42", b"\x4a", b"\x52"
# AttributeProto: name = 1 (string), int64_val = 9 (varint), bool_val = 27 (varint),
# string_val = 29 (string).
_NAME_TAG, _INT64_TAG, _BOOL_TAG, _STRING_TAG = b"\x0a", b"\x48", b"\xd8\x01", b"\xea\x01"
_UINT64_MASK = (1 << 64) - 1
_CACHE_LIMIT = 1 << 16


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


def io_info(outputs: bool, values: bytes, shapes: bytes, types: bytes) -> bytes:
    """``inputs``/``outputs`` with the JSON text of values, shapes and types (an empty text
    is left out, as protobuf leaves out a field holding its default)."""
    body = b""
    if values:
        body += b"\x0a" + encode_varint(len(values)) + values
    if shapes:
        body += b"\x12" + encode_varint(len(shapes)) + shapes
    if types:
        body += b"\x1a" + encode_varint(len(types)) + types
    return (_OUTPUTS_TAG if outputs else _INPUTS_TAG) + encode_varint(len(body)) + body


class AttrPieces:
    """Serialized attribute entries, remembered for the (name, value) pairs seen before
    (up to a bound); ``int64`` of a name in ``uncached`` (values unique per node, such as
    record-function ids) is encoded each time."""

    def __init__(self, uncached: frozenset[str] = frozenset({"rf_id", "seq_id"})) -> None:
        self._cache: dict[tuple, bytes] = {}
        self._uncached = uncached
        self._names: dict[str, bytes] = {}

    def int64(self, name: str, value: int) -> bytes:
        key = (name, int, value)
        piece = self._cache.get(key)
        if piece is not None:
            return piece
        prefix = self._names.get(name)
        if prefix is None:
            prefix = self._names[name] = _named(name) + _INT64_TAG
        body = prefix + encode_varint(value & _UINT64_MASK)
        piece = _ATTR_TAG + encode_varint(len(body)) + body
        if name not in self._uncached:
            self._remember(key, piece)
        return piece

    def boolean(self, name: str, value: bool) -> bytes:
        key = (name, bool, value)
        piece = self._cache.get(key)
        return piece if piece is not None else self._remember(key, bool_attr(name, value))

    def string(self, name: str, value: str) -> bytes:
        key = (name, str, value)
        piece = self._cache.get(key)
        return piece if piece is not None else self._remember(key, string_attr(name, value))

    def _remember(self, key: tuple, piece: bytes) -> bytes:
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = piece
        return piece
