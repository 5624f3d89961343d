"""Mutants of Chakra ET (``.et``) files, at the protobuf wire level.

A seed is split into its framed messages (GlobalMetadata, then the nodes). A mutant appends
wire fields to a message (protobuf parsers merge them: a repeated scalar overrides the earlier
one, a repeated field gains an element), so it can hold what the message API refuses to set:
ids of 2^64-1, invalid UTF-8 in a string, a signed value in an unsigned field, unknown
fields, malformed wire types. It can also delete, repeat or swap messages, and damage the
framing (a wrong or non-canonical size prefix, a cut, trailing bytes).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence
from typing import Callable

from chakra.et import Node
from chakra.et.framing import iter_framed_messages
from tests.fuzz.stream_mutators import Mutation, weighted

U64 = (1 << 64) - 1
SPECIAL_U64 = (0, 1, 2**31, 2**32, 2**53 + 1, 2**63 - 1, 2**63, U64)
SPECIAL_I64 = (0, -1, 1, -(2**63), 2**63 - 1, 2**31, -(2**31) - 1, 2**40)
ATTR_NAMES = ("tid", "stream", "device", "is_cpu_op", "runs_on_host", "comm_type", "comm_size",
              "pg_name", "comm_src", "comm_dst", "comm_tag", "comm_priority", "duration_ns",
              "segment_of", "num_ops", "tensor_size", "rf_id", "fw_parent", "op_schema",
              "involved_dim", "", "x\x00y")  # fmt: skip
#: AttributeProto oneof members (field number, wire kind) of :func:`_attr_value`
_ATTR_FIELDS = {"double_val": 3, "float_val": 5, "int32_val": 7, "int64_val": 9,
                "uint32_val": 11, "uint64_val": 13, "sint32_val": 15, "sint64_val": 17,
                "fixed32_val": 19, "fixed64_val": 21, "bool_val": 27, "string_val": 29,
                "bytes_val": 31, "int64_list": 10, "uint64_list": 14, "string_list": 30,
                "double_list": 4, "bool_list": 28}  # fmt: skip
_BAD_STRINGS = (b"\xff\xfe", b"", b"x" * 100_000, b"[" * 100_000, b"null", b"[[1,2],[3]]",
                b'{"a":', b"\x00", "é中".encode(), b"NaN")  # fmt: skip


def varint(value: int) -> bytes:
    """Unsigned base-128 varint of ``value`` taken modulo 2^64 (negative: two's complement)."""
    value &= U64
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def tag(number: int, wire_type: int) -> bytes:
    return varint((number << 3) | wire_type)


def field_varint(number: int, value: int) -> bytes:
    return tag(number, 0) + varint(value)


def field_bytes(number: int, payload: bytes) -> bytes:
    return tag(number, 2) + varint(len(payload)) + payload


def split_messages(data: bytes) -> list[bytes]:
    """The bodies of a valid ``.et`` file's framed messages."""
    import io

    return [body for _, body in iter_framed_messages(io.BytesIO(data), "<seed>")]


def frame(bodies: Sequence[bytes]) -> bytes:
    return b"".join(varint(len(body)) + body for body in bodies)


class EtSeed:
    """A seed ``.et`` file's message bodies and its node ids."""

    def __init__(self, name: str, data: bytes) -> None:
        self.name = name
        self.bodies = split_messages(data)
        self.ids = [Node.FromString(body).id for body in self.bodies[1:]]


def _some_id(seed: EtSeed, rng: random.Random) -> tuple[int, str]:
    roll = rng.randrange(4)
    if roll == 0 and seed.ids:
        value = seed.ids[rng.randrange(len(seed.ids))]
        return value, f"existing id {value}"
    if roll == 1:
        value = max(seed.ids, default=0) + 1000
        return value, f"missing id {value}"
    value = SPECIAL_U64[rng.randrange(len(SPECIAL_U64))]
    return value, f"{value}"


def _attr_value(rng: random.Random) -> tuple[bytes, str]:
    member = list(_ATTR_FIELDS)[rng.randrange(len(_ATTR_FIELDS))]
    number = _ATTR_FIELDS[member]
    if member in ("double_val", "float_val"):
        value = (float("nan"), float("inf"), -1.5, 1e300, -0.0, 2.0**64)[rng.randrange(6)]
        if member == "double_val":
            return tag(number, 1) + struct.pack("<d", value), f"{member}={value}"
        return tag(number, 5) + struct.pack("<f", value if abs(value) < 3e38 else float("inf")), \
            f"{member}={value}"  # fmt: skip
    if member in ("fixed32_val", "fixed64_val"):
        size = 4 if member == "fixed32_val" else 8
        raw = bytes(rng.randrange(256) for _ in range(size))
        return tag(number, 5 if size == 4 else 1) + raw, f"{member}={raw.hex()}"
    if member in ("string_val", "bytes_val"):
        raw = _BAD_STRINGS[rng.randrange(len(_BAD_STRINGS))]
        return field_bytes(number, raw), f"{member}={raw[:12]!r}"
    if member.endswith("_list"):
        if member == "string_list":
            raw = _BAD_STRINGS[rng.randrange(len(_BAD_STRINGS))]
            return field_bytes(number, field_bytes(1, raw)), f"{member}=[{raw[:12]!r}]"
        if member == "double_list":
            return field_bytes(number, field_bytes(1, struct.pack("<d", float("nan")))), \
                f"{member}=[nan]"  # fmt: skip
        values = [SPECIAL_I64[rng.randrange(len(SPECIAL_I64))] for _ in range(rng.randrange(4))]
        packed = b"".join(varint(v) for v in values)
        return field_bytes(number, field_bytes(1, packed)), f"{member}={values}"
    if member == "bool_val":
        value = (0, 1, 2, U64)[rng.randrange(4)]
        return field_varint(number, value), f"{member}={value}"
    if member in ("sint32_val", "sint64_val"):
        value = SPECIAL_I64[rng.randrange(len(SPECIAL_I64))]
        zigzag = (value << 1) ^ (value >> 63)
        return field_varint(number, zigzag), f"{member}={value}"
    pool = SPECIAL_U64 if member.startswith("uint") else SPECIAL_I64
    value = pool[rng.randrange(len(pool))]
    return field_varint(number, value), f"{member}={value}"


# Each operation changes ``bodies`` (index 0: GlobalMetadata) in place and says what it did.
EtOp = Callable[[EtSeed, list[bytes], random.Random], str]


def _node_index(bodies: list[bytes], rng: random.Random) -> int:
    if len(bodies) < 2:
        raise LookupError("no node")
    return 1 + rng.randrange(len(bodies) - 1)


def _op_scalar(seed: EtSeed, bodies: list[bytes], rng: random.Random) -> str:
    at = _node_index(bodies, rng)
    number, name = ((1, "id"), (3, "type"), (6, "start_time_micros"),
                    (7, "duration_micros"))[rng.randrange(4)]  # fmt: skip
    if name == "id":
        value, label = _some_id(seed, rng)
    elif name == "type":
        value = (0, 1, 2, 3, 5, 6, 7, 8, 99, 2**31, U64)[rng.randrange(11)]
        label = str(value)
    else:
        value = SPECIAL_U64[rng.randrange(len(SPECIAL_U64))]
        label = str(value)
    bodies[at] += field_varint(number, value)
    return f"message {at}: {name} = {label}"


def _op_dep(seed: EtSeed, bodies: list[bytes], rng: random.Random) -> str:
    at = _node_index(bodies, rng)
    number, name = ((4, "ctrl_deps"), (5, "data_deps"))[rng.randrange(2)]
    if rng.randrange(4) == 0:
        own = Node.FromString(bodies[at]).id if _decodes(bodies[at]) else 0
        value, label = own, "its own id"
    else:
        value, label = _some_id(seed, rng)
    bodies[at] += field_varint(number, value)
    return f"message {at}: {name} += {label}"


def _decodes(body: bytes) -> bool:
    try:
        Node.FromString(body)
    except Exception:
        return False
    return True


def _op_attr(seed: EtSeed, bodies: list[bytes], rng: random.Random) -> str:
    at = 0 if rng.randrange(8) == 0 else _node_index(bodies, rng)
    name = ATTR_NAMES[rng.randrange(len(ATTR_NAMES))]
    value, label = _attr_value(rng)
    number = 2 if at == 0 else 10  # GlobalMetadata.attr / Node.attr
    bodies[at] += field_bytes(number, field_bytes(1, name.encode()) + value)
    return f"message {at}: attr {name!r} {label}"


def _op_string(seed: EtSeed, bodies: list[bytes], rng: random.Random) -> str:
    at = 0 if rng.randrange(6) == 0 else _node_index(bodies, rng)
    raw = _BAD_STRINGS[rng.randrange(len(_BAD_STRINGS))]
    if at == 0:
        bodies[0] += field_bytes(1, raw)
        return f"message 0: version = {raw[:12]!r}"
    kind = rng.randrange(3)
    if kind == 0:
        bodies[at] += field_bytes(2, raw)
        return f"message {at}: name = {raw[:12]!r}"
    number, which = ((8, "inputs"), (9, "outputs"))[rng.randrange(2)]
    part = 1 + rng.randrange(3)
    bodies[at] += field_bytes(number, field_bytes(part, raw))
    return f"message {at}: {which} field {part} = {raw[:12]!r}"


def _op_unknown(seed: EtSeed, bodies: list[bytes], rng: random.Random) -> str:
    at = rng.randrange(len(bodies))
    number = (11, 12, 100, 1000, (1 << 29) - 1)[rng.randrange(5)]
    kind = rng.randrange(7)
    if kind == 0:
        extra = field_varint(number, U64)
    elif kind == 1:
        extra = tag(number, 1) + b"\x00" * 8
    elif kind == 2:
        extra = field_bytes(number, b"\x08\x01")
    elif kind == 3:
        extra = tag(number, 5) + b"\x00" * 4
    elif kind == 4:
        extra = tag(number, rng.choice((3, 4, 6, 7)))  # group markers, no wire types
    elif kind == 5:
        extra = tag(number, 2) + varint(1 << 20)  # a length past the end
    else:
        extra = tag(number, 0) + b"\xff" * 11  # a varint that never ends
    bodies[at] += extra
    return f"message {at}: unknown field {number} ({extra[:16].hex()})"


def _op_messages(seed: EtSeed, bodies: list[bytes], rng: random.Random) -> str:
    kind = rng.randrange(7)
    at = rng.randrange(len(bodies))
    if kind == 0:
        del bodies[at]
        return f"message {at} deleted"
    if kind == 1:
        bodies.insert(at, bodies[at])
        return f"message {at} repeated"
    if kind == 2:
        other = rng.randrange(len(bodies))
        bodies[at], bodies[other] = bodies[other], bodies[at]
        return f"messages {at} and {other} swapped"
    if kind == 3:
        bodies[at] = bytes(rng.randrange(256) for _ in range(1 + rng.randrange(40)))
        return f"message {at} replaced by random bytes"
    if kind == 4:
        bodies[at] = b""
        return f"message {at} emptied"
    if kind == 5:
        cut = rng.randrange(len(bodies[at]) + 1)
        bodies[at] = bodies[at][:cut]
        return f"message {at} cut to {cut} bytes"
    bodies.append(bodies[0])
    return "GlobalMetadata repeated at the end"


ET_OPS: Sequence[tuple[int, EtOp]] = (
    (4, _op_scalar), (3, _op_dep), (4, _op_attr), (2, _op_string), (2, _op_unknown),
    (3, _op_messages),
)  # fmt: skip


def _framing(data: list[bytes], rng: random.Random) -> tuple[bytes, str]:
    """Frame the bodies, one size prefix (or the end of the file) damaged."""
    at = rng.randrange(len(data)) if data else 0
    kind = rng.randrange(7)
    prefixes = [varint(len(body)) for body in data]
    if not data:
        return b"", "no messages"
    size = len(data[at])
    if kind == 0:
        delta = (1, -1, 7, -7, 1000)[rng.randrange(5)]
        prefixes[at] = varint(max(0, size + delta))
        label = f"size of message {at} off by {delta}"
    elif kind == 1:
        big = (2**31 - 1, 2**31, 2**32, 2**63, U64)[rng.randrange(5)]
        prefixes[at] = varint(big)
        label = f"size of message {at} = {big}"
    elif kind == 2:
        raw = bytearray(varint(size))
        raw[-1] |= 0x80
        prefixes[at] = bytes(raw) + b"\x80" * rng.randrange(3) + b"\x00"
        label = f"size of message {at} as a non-canonical varint {prefixes[at].hex()}"
    elif kind == 3:
        prefixes[at] = b"\xff" * 10 + b"\x01"
        label = f"size of message {at} an 11-byte varint"
    else:
        whole = frame(data)
        if kind == 4:
            cut = rng.randrange(len(whole) + 1)
            return whole[:cut], f"file cut at byte {cut} of {len(whole)}"
        if kind == 5:
            tail = (b"\x00", b"\x05ab", b"\x80", b"garbage")[rng.randrange(4)]
            return whole + tail, f"file followed by {tail!r}"
        return b"", "empty file"
    return b"".join(p + b for p, b in zip(prefixes, data)), label


def mutate_et(seed: EtSeed, rng: random.Random) -> tuple[bytes, Mutation]:
    """A mutant of an ``.et`` seed: one to three message operations, sometimes a damaged
    framing instead of a clean one."""
    mutation = Mutation(seed.name)
    bodies = list(seed.bodies)
    wanted = 1 if rng.randrange(10) < 7 else 2 + rng.randrange(2)
    tries = 0
    while len(mutation.steps) < wanted and tries < 20:
        tries += 1
        try:
            mutation.steps.append(weighted(rng, ET_OPS)(seed, bodies, rng))
        except LookupError:
            continue
    if rng.randrange(6) == 0:
        data, label = _framing(bodies, rng)
        mutation.steps.append(label)
        return data, mutation
    return frame(bodies), mutation
