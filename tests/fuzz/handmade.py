"""Hand-made hostile inputs of the regression tests, generated at test time: a gzip bomb,
deeply nested JSON, edited ``.et`` files and ET+ lines, damaged tar archives."""

from __future__ import annotations

import gzip
import io
import json
import struct
import tarfile
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Callable

from chakra.et import read_et, write_et

DEEP = 100_000


def gzip_bomb(path: Path, size: int = 2 << 30, *, prefix: bytes = b"", suffix: bytes = b"") -> int:
    """Write a gzip file that inflates to ``size`` bytes: ``prefix``, spaces, ``suffix``
    (about 1 KiB of file per MiB inflated: 2 GiB in 2 MB). Built in well under a second by
    repeating one deflate block of 1 MiB of spaces compressed after a full flush (each such
    block is byte-identical and self-contained); returns the inflated size."""
    chunk = b" " * (1 << 20)
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = comp.compress(prefix) + comp.flush(zlib.Z_FULL_FLUSH)
    block = comp.compress(chunk) + comp.flush(zlib.Z_FULL_FLUSH)
    count = (size - len(prefix) - len(suffix)) // len(chunk)
    crc = zlib.crc32(prefix)
    for _ in range(count):
        crc = zlib.crc32(chunk, crc)
    crc = zlib.crc32(suffix, crc)
    total = len(prefix) + count * len(chunk) + len(suffix)
    with path.open("wb") as out:
        out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")
        out.write(head)
        for _ in range(count):
            out.write(block)
        out.write(comp.compress(suffix) + comp.flush(zlib.Z_FINISH))
        out.write(struct.pack("<II", crc & 0xFFFFFFFF, total & 0xFFFFFFFF))
    return total


def nested(depth: int = DEEP) -> bytes:
    """``[[[...]]]``, ``depth`` arrays deep."""
    return b"[" * depth + b"]" * depth


def write_json(path: Path, document: Any, raw: dict[str, bytes] = {}) -> Path:  # noqa: B006
    """``document`` as JSON, each string value ``"<key>"`` of ``raw`` replaced by its bytes
    (what :mod:`json` cannot write: 5,000 digits, invalid UTF-8, deep nesting)."""
    data = json.dumps(document).encode()
    for key, value in raw.items():
        data = data.replace(json.dumps(key).encode(), value)
    path.write_bytes(data)
    return path


def read_bytes(path: Path) -> bytes:
    """A file's (inflated) bytes."""
    from chakra.fileio import read_input

    return read_input(path)


def read_json(path: Path) -> Any:
    from chakra.fileio import read_input

    return json.loads(read_input(path))


def edit_et(source: Path, target: Path, edit: Callable[[Any, list[Any]], None]) -> Path:
    """Copy a ``.et`` with ``edit(metadata, nodes)`` applied to its messages."""
    metadata, nodes = read_et(source)
    edit(metadata, nodes)
    write_et(target, metadata, nodes)
    return target


def renumber(nodes: list[Any], index: int, new_id: int) -> None:
    """Give ``nodes[index]`` the id ``new_id`` and point every dependency on it there."""
    old = nodes[index].id
    nodes[index].id = new_id
    for node in nodes:
        for deps in (node.data_deps, node.ctrl_deps):
            for i, dep in enumerate(deps):
                if dep == old:
                    deps[i] = new_id


def et_plus_lines(path: Path) -> list[bytes]:
    """An ET+ file of the linker's layout as lines: header, ``"chakra_link"``, ``"nodes": [``,
    one node per line, ``]}``."""
    return path.read_bytes().split(b"\n")


def first_node_line(lines: list[bytes], has: bytes = b'"id"') -> int:
    return next(i for i, line in enumerate(lines) if i >= 3 and has in line)


def edit_et_plus(
    source: Path, target: Path, edit: Callable[[dict], None], has: bytes = b'"ts"'
) -> Path:
    """Copy an ET+ file with ``edit(node)`` applied to the first node whose line holds
    ``has``, keeping the line layout (so the converter reads it line by line)."""
    lines = et_plus_lines(source)
    at = first_node_line(lines, has)
    comma = lines[at].endswith(b",")
    node = json.loads(lines[at].rstrip(b","))
    edit(node)
    lines[at] = json.dumps(node, separators=(",", ":")).encode() + (b"," if comma else b"")
    target.write_bytes(b"\n".join(lines))
    return target


def bundle(path: Path, files: Iterable[Path], *, fmt: int = tarfile.GNU_FORMAT) -> bytes:
    """A ``.tgz`` of ``files`` (by name), written to ``path``; returns its bytes."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=fmt) as archive:
        for file in files:
            archive.add(file, arcname=file.name)
    path.write_bytes(buffer.getvalue())
    return buffer.getvalue()


def pax_path_with_nul(path: Path, member: Path) -> Path:
    """A ``.tgz`` whose one member has a pax ``path`` header holding a NUL byte."""
    data = member.read_bytes()
    record = b" path=" + member.name.encode()[:4] + b"\x00" + member.name.encode()[4:] + b"\n"
    length = len(record) + 1
    while len(str(length)) + len(record) != length:  # the length counts its own digits
        length = len(str(length)) + len(record)
    record = str(length).encode() + record
    header = tarfile.TarInfo("././@PaxHeader")
    header.type, header.size = tarfile.XHDTYPE, len(record)
    info = tarfile.TarInfo(member.name)
    info.size = len(data)
    raw = (header.tobuf(tarfile.USTAR_FORMAT) + record + b"\0" * (-len(record) % 512)
           + info.tobuf(tarfile.USTAR_FORMAT) + data + b"\0" * (-len(data) % 512)
           + b"\0" * 1024)  # fmt: skip
    path.write_bytes(gzip.compress(raw))
    return path
