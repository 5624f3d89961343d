"""A compact set of node ids: one bit per id below a bound, a Python set above it."""

from __future__ import annotations

#: Ids below this are kept in a bitmap of at most 16 MiB; others in a set.
BITMAP_LIMIT = 1 << 27


class IdSet:
    """Set of non-negative ints sized for dense ids: ``n`` ids from 0 cost about ``n / 8``
    bytes instead of ~60 bytes each in a ``set``. Negative or huge ids go to a plain set."""

    __slots__ = ("_bits", "_sparse")

    def __init__(self) -> None:
        self._bits = bytearray()
        self._sparse: set[int] = set()

    def add(self, value: int) -> None:
        if 0 <= value < BITMAP_LIMIT:
            byte = value >> 3
            bits = self._bits
            if byte >= len(bits):
                bits.extend(bytes(max(byte + 1 - len(bits), len(bits))))
            bits[byte] |= 1 << (value & 7)
        else:
            self._sparse.add(value)

    def __contains__(self, value: object) -> bool:
        if isinstance(value, int) and 0 <= value < BITMAP_LIMIT:
            byte = value >> 3
            bits = self._bits
            return byte < len(bits) and bool(bits[byte] & (1 << (value & 7)))
        return value in self._sparse
