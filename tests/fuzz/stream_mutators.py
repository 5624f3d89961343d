"""Mutations below the structure of a format: bytes (truncate, flip, drop a comma...), the
gzip layer (a cut stream, a bad CRC, trailing garbage, several members...) and line-and-token
texts (ASTRA-sim workloads and logs); and what every mutator shares: :class:`Mutation`, the
record of what was done, and :func:`weighted`, a weighted draw."""

from __future__ import annotations

import random
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Mutation:
    """What was done to a seed, step by step."""

    seed: str
    steps: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.seed}: " + "; ".join(self.steps or ["unchanged"])


def weighted(rng: random.Random, table: Sequence[tuple[int, Any]]) -> Any:
    total = sum(weight for weight, _ in table)
    pick = rng.randrange(total)
    for weight, item in table:
        if pick < weight:
            return item
        pick -= weight
    raise AssertionError("unreachable")


def count(rng: random.Random) -> int:
    roll = rng.randrange(10)
    return 1 if roll < 7 else 2 if roll < 9 else 3


# --- bytes ---------------------------------------------------------------------------------

_TOKENS = (b",", b"]", b"}", b"[", b"{", b'"', b"\\", b"\x00", b"\xff", b"NaN", b"-", b"e9",
           b"\n", b":", b"null", b"\xef\xbb\xbf")  # fmt: skip


def _truncate(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    at = rng.randrange(len(data) + 1)
    return data[:at], f"truncate at byte {at} of {len(data)}"


def _flip(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    out = bytearray(data)
    spots = []
    for _ in range(1 + rng.randrange(4)):
        at = rng.randrange(len(out))
        out[at] ^= 1 + rng.randrange(255)
        spots.append(at)
    return bytes(out), f"flip bytes at {spots}"


def _delete_span(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    at = rng.randrange(len(data))
    size = 1 + rng.randrange(16)
    return data[:at] + data[at + size :], f"delete bytes {at}..{at + size}"


def _insert_token(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    at = rng.randrange(len(data) + 1)
    token = _TOKENS[rng.randrange(len(_TOKENS))]
    return data[:at] + token + data[at:], f"insert {token!r} at byte {at}"


def _drop_line_comma(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    spots = [i for i in range(len(data) - 1) if data[i : i + 2] == b",\n"]
    if not spots:
        raise LookupError("no line ends in a comma")
    at = spots[rng.randrange(len(spots))]
    line = data.count(b"\n", 0, at) + 1
    return data[:at] + data[at + 1 :], f"drop the comma ending line {line}"


def _line_op(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    lines = data.split(b"\n")
    at = rng.randrange(len(lines))
    kind = rng.randrange(3)
    if kind == 0:
        lines.insert(at, lines[at])
        return b"\n".join(lines), f"duplicate line {at + 1}"
    if kind == 1:
        del lines[at]
        return b"\n".join(lines), f"delete line {at + 1}"
    other = rng.randrange(len(lines))
    lines[at], lines[other] = lines[other], lines[at]
    return b"\n".join(lines), f"swap lines {at + 1} and {other + 1}"


def _whole(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    options = [(b"", "empty file"), (b"   \n\t", "only blanks"), (b"null", "null"),
               (b"[]", "[]"), (b"{}", "{}"), (b"\xef\xbb\xbf" + data, "UTF-8 BOM first"),
               (data.replace(b"\n", b"\r\n"), "CRLF line ends"),
               (data.decode("utf-8", "replace").encode("utf-16"), "UTF-16"),
               (data + data, "twice"), (data + b"\x00", "trailing NUL")]  # fmt: skip
    out, label = options[rng.randrange(len(options))]
    return out, label


BYTE_OPS: Sequence[tuple[int, Callable[[bytes, random.Random], tuple[bytes, str]]]] = (
    (3, _truncate), (3, _flip), (2, _delete_span), (2, _insert_token), (2, _drop_line_comma),
    (2, _line_op), (1, _whole),
)  # fmt: skip


def mutate_bytes(data: bytes, rng: random.Random, mutation: Mutation) -> bytes:
    """One byte-level operation (retrying another when the chosen one does not apply)."""
    for _ in range(8):
        op = weighted(rng, BYTE_OPS)
        if not data and op is not _whole:
            continue
        try:
            data, label = op(data, rng)
        except LookupError:
            continue
        mutation.steps.append(label)
        return data
    return data


# --- gzip ----------------------------------------------------------------------------------


def gzip_bytes(data: bytes, *, level: int = 6) -> bytes:
    """A gzip member of ``data`` with no name and mtime 0."""
    comp = zlib.compressobj(level, zlib.DEFLATED, -15)
    body = comp.compress(data) + comp.flush()
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + body
            + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF))  # fmt: skip


def _gz_truncate(gz: bytes, data: bytes, rng: random.Random) -> tuple[bytes, str]:
    at = rng.randrange(len(gz))
    return gz[:at], f"gzip cut at byte {at} of {len(gz)}"


def _gz_corrupt_body(gz: bytes, data: bytes, rng: random.Random) -> tuple[bytes, str]:
    if len(gz) <= 19:
        raise LookupError("no deflate body")
    at = 10 + rng.randrange(len(gz) - 18)
    out = bytearray(gz)
    out[at] ^= 1 + rng.randrange(255)
    return bytes(out), f"gzip deflate byte {at} flipped"


def _gz_bad_crc(gz: bytes, data: bytes, rng: random.Random) -> tuple[bytes, str]:
    return gz[:-8] + struct.pack("<I", (zlib.crc32(data) ^ 1)) + gz[-4:], "gzip CRC wrong"


def _gz_bad_size(gz: bytes, data: bytes, rng: random.Random) -> tuple[bytes, str]:
    return gz[:-4] + struct.pack("<I", 0xFFFFFFFF), "gzip ISIZE 2^32-1"


def _gz_trailing(gz: bytes, data: bytes, rng: random.Random) -> tuple[bytes, str]:
    extra = (b"\x00" * 7, b"garbage", b"\x1f\x8b", b"\x1f\x8b\x08\x00")[rng.randrange(4)]
    return gz + extra, f"gzip followed by {extra!r}"


def _gz_members(gz: bytes, data: bytes, rng: random.Random) -> tuple[bytes, str]:
    at = rng.randrange(len(data) + 1)
    return gzip_bytes(data[:at]) + gzip_bytes(data[at:]), f"two gzip members split at {at}"


def _gz_header(gz: bytes, data: bytes, rng: random.Random) -> tuple[bytes, str]:
    flags = rng.randrange(256)
    return gz[:3] + bytes((flags,)) + gz[4:], f"gzip header flags {flags:#x}"


def _gz_nested(gz: bytes, data: bytes, rng: random.Random) -> tuple[bytes, str]:
    return gzip_bytes(gz), "gzip of gzip"


GZIP_OPS: Sequence[tuple[int, Callable[[bytes, bytes, random.Random], tuple[bytes, str]]]] = (
    (3, _gz_truncate), (2, _gz_corrupt_body), (2, _gz_bad_crc), (1, _gz_bad_size),
    (2, _gz_trailing), (2, _gz_members), (1, _gz_header), (1, _gz_nested),
)  # fmt: skip


def maybe_gzip(data: bytes, rng: random.Random, mutation: Mutation) -> tuple[bytes, bool]:
    """``data`` as it is (most often), gzipped, or gzipped and damaged; whether it is gzip."""
    roll = rng.randrange(10)
    if roll < 7:
        return data, False
    gz = gzip_bytes(data)
    mutation.steps.append("gzip")
    if roll < 9:
        return gz, True
    try:
        damaged, label = weighted(rng, GZIP_OPS)(gz, data, rng)
    except LookupError:
        return gz, True
    mutation.steps.append(label)
    return damaged, True


# --- text workloads and simulator logs -----------------------------------------------------

_TEXT_TOKENS = ("-1", "0", "1", "99999999999999999999", "9" * 5000, "1e3", "nan", "abc", "",
                "0x10", "\u0663", "+5", "2147483648", "-9223372036854775809", "\xff",
                "ALLREDUCE", "NONE", "ALLTOALL", "BOGUS", "#", "=", "==", "tick=")  # fmt: skip


def mutate_lines(name: str, text: str, rng: random.Random) -> tuple[bytes, Mutation]:
    """A mutant of a line-and-token text (ASTRA-sim workload or log): tokens replaced,
    removed or repeated, lines repeated, dropped or swapped, or a byte-level operation."""
    mutation = Mutation(name)
    lines = [line.split(" ") for line in text.split("\n")]
    for _ in range(count(rng)):
        kind = rng.randrange(8)
        row = rng.randrange(len(lines))
        tokens = lines[row]
        col = rng.randrange(len(tokens)) if tokens else 0
        if kind <= 2 and tokens:
            new = _TEXT_TOKENS[rng.randrange(len(_TEXT_TOKENS))]
            if "=" in tokens[col] and rng.randrange(2):  # a log item: keep its key
                new = tokens[col].split("=", 1)[0] + "=" + new
            elif "," in tokens[col] and rng.randrange(2):  # a log record: one of its items
                items = tokens[col].split(",")
                at = rng.randrange(len(items))
                key = items[at].split("=", 1)[0]
                items[at] = f"{key}={new}" if "=" in items[at] else new
                new = ",".join(items)
            tokens[col] = new
            mutation.steps.append(f"line {row + 1} token {col + 1} = {new[:20]!r}")
        elif kind == 3 and tokens:
            del tokens[col]
            mutation.steps.append(f"line {row + 1} token {col + 1} deleted")
        elif kind == 4 and tokens:
            tokens.insert(col, tokens[col])
            mutation.steps.append(f"line {row + 1} token {col + 1} repeated")
        elif kind == 5:
            lines.insert(row, list(tokens))
            mutation.steps.append(f"line {row + 1} repeated")
        elif kind == 6 and len(lines) > 1:
            del lines[row]
            mutation.steps.append(f"line {row + 1} deleted")
        else:
            other = rng.randrange(len(lines))
            lines[row], lines[other] = lines[other], lines[row]
            mutation.steps.append(f"lines {row + 1} and {other + 1} swapped")
    data = "\n".join(" ".join(tokens) for tokens in lines).encode("utf-8", "surrogateescape")
    if rng.randrange(6) == 0:
        data = mutate_bytes(data, rng, mutation)
    return data, mutation
