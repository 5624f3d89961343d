"""Hand-made .et byte strings shared by the reader and CLI tests."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

from chakra.et import GlobalMetadata, Node
from chakra.et.framing import encode_varint


def framed(*messages: object) -> bytes:
    out = b""
    for message in messages:
        body = message.SerializeToString()  # type: ignore[attr-defined]
        out += encode_varint(len(body)) + body
    return out


def bad_inputs(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Each bad file and the text its one-line error must contain."""
    good = framed(GlobalMetadata(version="1"), Node(id=1, name="a"), Node(id=2, name="bb"))
    cases: dict[str, tuple[bytes, str]] = {
        "empty": (
            b"",
            "empty file; a Chakra ET starts with a GlobalMetadata message at byte offset 0",
        ),
        "random": (random.Random(7).randbytes(4096), "at byte offset"),
        "cut_in_length": (
            good + b"\x80",
            f"inside a message size prefix at byte offset {len(good)}",
        ),
        "cut_in_body": (
            good[:-1],
            f"inside a message of 6 bytes (5 present) at byte offset {len(good) - 7}",
        ),  # id 2 + name "bb": 08 02 12 02 62 62
        "gzip_of_garbage": (b"\x1f\x8b" + random.Random(3).randbytes(300), "corrupt gzip data"),
        "truncated_gzip": (gzip.compress(good)[:-12], "corrupt gzip data"),
    }
    out = {}
    for name, (content, expected) in cases.items():
        path = tmp_path / f"{name}.et"
        path.write_bytes(content)
        out[name] = (path, expected)
    return out


BAD_INPUT_NAMES = [
    "empty",
    "random",
    "cut_in_length",
    "cut_in_body",
    "gzip_of_garbage",
    "truncated_gzip",
]
