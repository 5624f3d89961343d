"""Length-delimited framing of ``.et`` files: each message is preceded by its size as a varint.

The size is an unsigned base-128 varint (7 bits a byte, least significant group first, high
bit set on every byte but the last). There is no header or trailer. Unlike the reference
reader, a size of zero is an empty message, not the end of the file.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import BinaryIO

from chakra.errors import EtFormatError, FileAccessError, PathLike

MAX_VARINT_BYTES = 10
#: Protobuf cannot parse a message of 2 GiB or more; a larger size means a corrupt file.
MAX_MESSAGE_BYTES = (1 << 31) - 1
READ_CHUNK_BYTES = 1 << 20

# Size prefixes of the lengths that dominate real files, computed once; public so that the
# hot loops of chakra.et.node_fields index it inline (a call per small varint costs more).
SMALL_VARINTS = [
    bytes((n,)) if n < 0x80 else bytes(((n & 0x7F) | 0x80, n >> 7)) for n in range(1 << 14)
]
SMALL_VARINT_LIMIT = 1 << 14
# The low 14 bits of a larger value, both bytes with their continuation bit set; made on
# the first such value (0.8 MiB: not held by a process that never writes a large one).
_LOW_GROUPS: list[bytes] = []


def _low_groups() -> list[bytes]:
    if not _LOW_GROUPS:
        _LOW_GROUPS.extend(bytes(((n & 0x7F) | 0x80, (n >> 7) | 0x80)) for n in range(1 << 14))
    return _LOW_GROUPS


def encode_varint(value: int) -> bytes:
    """Encode a non-negative integer as an unsigned base-128 varint."""
    if value < 1 << 14:
        return SMALL_VARINTS[value]
    if value < 1 << 42:  # ids, durations; microsecond timestamps (epoch-based: 31 bits)
        low = _LOW_GROUPS or _low_groups()
        if value < 1 << 28:
            return low[value & 0x3FFF] + SMALL_VARINTS[value >> 14]
        return low[value & 0x3FFF] + low[(value >> 14) & 0x3FFF] + SMALL_VARINTS[value >> 28]
    out = bytearray()  # larger (negative int64s): not the table, so that import needs none
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class _ChunkedInput:
    """A read buffer over ``stream`` that keeps only the bytes not yet consumed."""

    def __init__(self, stream: BinaryIO, path: PathLike, decompressed: bool) -> None:
        self.stream = stream
        self.path = path
        self.decompressed = decompressed
        self.buffer = b""
        self.position = 0  # index of the first unconsumed byte in buffer
        self.base_offset = 0  # file offset of buffer[0]
        self.at_eof = False

    def available(self) -> int:
        return len(self.buffer) - self.position

    def fill(self, wanted: int) -> None:
        """Try to make ``wanted`` unconsumed bytes available; fewer only at end of input."""
        if self.available() >= wanted or self.at_eof:
            return
        parts = [self.buffer[self.position :]]
        have = len(parts[0])
        self.base_offset += self.position
        while have < wanted:
            chunk = self._read(READ_CHUNK_BYTES)
            if not chunk:
                self.at_eof = True
                break
            parts.append(chunk)
            have += len(chunk)
        self.buffer = b"".join(parts)
        self.position = 0

    def _read(self, size: int) -> bytes:
        try:
            return self.stream.read(size)
        except (OSError, EOFError, zlib.error) as exc:
            if not self.decompressed:
                raise FileAccessError(f"cannot read {self.path}: {exc}") from exc
            raise EtFormatError(
                self.path,
                f"corrupt gzip data ({exc})",
                self.base_offset + len(self.buffer),
                decompressed=self.decompressed,
            ) from exc


def iter_framed_messages(
    stream: BinaryIO, path: PathLike, *, decompressed: bool = False
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, body)`` for each length-delimited message of ``stream``.

    ``offset`` is where the message's size prefix starts. Holds one read chunk and one
    message in memory at a time. Raises :class:`EtFormatError` naming ``path`` and the offset
    for a size prefix or body cut short by the end of input, a size prefix over 10 bytes, or a
    size of 2 GiB or more. ``decompressed`` says ``stream`` inflates a gzip file, so offsets
    count inflated bytes (and errors say so).
    """
    data = _ChunkedInput(stream, path, decompressed)
    while True:
        yield from _whole_small_messages(data)
        data.fill(MAX_VARINT_BYTES)
        if data.available() == 0:
            return
        yield _next_message(data)


def _whole_small_messages(data: _ChunkedInput) -> Iterator[tuple[int, bytes]]:
    """The fast path: every whole message already in the buffer whose size prefix is one or
    two bytes (under 16 KiB: nearly all nodes), without the general path's calls per
    message (benchmarks/et_io.py times reading big files)."""
    buffer, index = data.buffer, data.position
    limit = len(buffer)
    while index + 2 < limit:
        first = buffer[index]
        if first < 0x80:
            size, header = first, 1
        else:
            second = buffer[index + 1]
            if second >= 0x80:
                break
            size, header = (first & 0x7F) | (second << 7), 2
        end = index + header + size
        if end > limit:
            break
        yield data.base_offset + index, buffer[index + header : end]
        index = end
    data.position = index


def _next_message(data: _ChunkedInput) -> tuple[int, bytes]:
    """The general path: the message at the buffer's position, whatever its size prefix,
    reading more input as needed; raises for a cut-off or malformed one."""

    def error(problem: str, offset: int) -> EtFormatError:
        return EtFormatError(data.path, problem, offset, decompressed=data.decompressed)

    buffer, index = data.buffer, data.position
    start = data.base_offset + index
    size = shift = 0
    while True:
        if index - data.position >= MAX_VARINT_BYTES:
            raise error("malformed message size (varint over 10 bytes)", start)
        if index >= len(buffer):
            raise error("file ends inside a message size prefix", start)
        byte = buffer[index]
        index += 1
        size |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
    if size > MAX_MESSAGE_BYTES:
        raise error(f"message size {size} exceeds protobuf's 2 GiB limit", start)
    header = index - data.position
    data.fill(header + size)
    buffer, index = data.buffer, data.position + header
    end = index + size
    if end > len(buffer):
        got = len(buffer) - index
        raise error(f"file ends inside a message of {size} bytes ({got} present)", start)
    data.position = end
    return start, buffer[index:end]
