"""Structure-aware mutants of small valid inputs: JSON traces, ASTRA-sim text workloads and
logs, and the gzip layer over any of them (``.et`` files: :mod:`tests.fuzz.et_mutators`).

Every mutator takes a ``random.Random`` (or the one hypothesis draws, whose choices it
shrinks) and returns the mutant's bytes with a :class:`Mutation` that says what was done,
readable enough to rebuild the case by hand. A mutant applies one to three operations: on the
decoded JSON tree (replace a value with a hostile one, delete a key, duplicate or swap list
elements, graft a value from elsewhere), on the serialized bytes (truncate, flip bytes, drop
a comma) and then maybe on the gzip layer (truncated stream, bad CRC, trailing garbage...).
"""

from __future__ import annotations

import copy
import json
import random
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

Path_ = tuple[Union[str, int], ...]


@dataclass
class Mutation:
    """What was done to a seed, step by step."""

    seed: str
    steps: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.seed}: " + "; ".join(self.steps or ["unchanged"])


class Raw:
    """Bytes spliced verbatim into serialized JSON where this value stands (what
    :func:`json.dumps` cannot write: 5,000-digit numbers, invalid UTF-8, deep nesting)."""

    def __init__(self, data: bytes, label: str) -> None:
        self.data = data
        self.label = label

    def __deepcopy__(self, memo: dict) -> Raw:
        return self

    def __repr__(self) -> str:
        return self.label


DEEP = 100_000


def _hostile_values() -> list[tuple[str, Any]]:
    nan, inf = float("nan"), float("inf")
    return [
        ("null", None), ("true", True), ("false", False), ("{}", {}), ('{"a": 1}', {"a": 1}),
        ("[]", []), ('[1, "x", null]', [1, "x", None]), ("0", 0), ("1", 1), ("-1", -1),
        ("2^31", 2**31), ("2^32", 2**32), ("2^53+1", 2**53 + 1), ("2^63-1", 2**63 - 1),
        ("2^63", 2**63), ("2^64-1", 2**64 - 1), ("2^64", 2**64), ("2^70", 2**70),
        ("-2^63-1", -(2**63) - 1), ("-2^70", -(2**70)),
        ("5000 digits", Raw(b"9" * 5000, "5000 digits")),
        ("-5000 digits", Raw(b"-" + b"9" * 5000, "-5000 digits")),
        ("NaN", nan), ("Infinity", inf), ("-Infinity", -inf), ("1e308", 1e308),
        ("-1e308", -1e308), ("1e400", Raw(b"1e400", "1e400")), ("-0.0", -0.0), ("0.5", 0.5),
        ("-0.5", -0.5), ("5e-324", 5e-324), ('""', ""), ('"x"', "x"), ('"12"', "12"),
        ('"-1"', "-1"), ('"NaN"', "NaN"), ("100k chars", "x" * 100_000),
        ('"a\\u0000b"', "a\x00b"), ("lone surrogate", "\ud800"), ("unicode", "é中🙂"),
        ("invalid UTF-8", Raw(b'"\xff\xfe\xc3("', "invalid UTF-8")),
        ("[[...]] 100k deep", Raw(b"[" * DEEP + b"]" * DEEP, "[[...]] 100k deep")),
        ("[[...]] 1k deep", Raw(b"[" * 1000 + b"]" * 1000, "[[...]] 1k deep")),
        ('{"a":{...}} 50k deep', Raw(b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "dict 50k deep")),
        ("100k zeros", [0] * 100_000),
    ]  # fmt: skip


HOSTILE: list[tuple[str, Any]] = _hostile_values()


# --- JSON trees ----------------------------------------------------------------------------


class JsonSeed:
    """A decoded JSON document with every path in it, bucketed by depth so that a mutant
    hits top-level keys as often as the fields of the thousandth node."""

    def __init__(self, name: str, document: Any, layout: str = "compact") -> None:
        self.name = name
        self.document = document
        self.layout = layout
        self.by_depth: list[list[Path_]] = []
        self.keys: list[str] = []
        #: strings that hold a JSON array or object (PyTorch's process-group table)
        self.embedded: list[Path_] = []
        self._collect()

    def _collect(self) -> None:
        keys: set[str] = set()
        stack: list[tuple[Path_, Any]] = [((), self.document)]
        while stack:
            path, value = stack.pop()
            if path:
                while len(self.by_depth) < len(path):
                    self.by_depth.append([])
                self.by_depth[len(path) - 1].append(path)
            if isinstance(value, dict):
                keys.update(value)
                stack.extend(((*path, k), v) for k, v in value.items())
            elif isinstance(value, list):
                stack.extend(((*path, i), v) for i, v in enumerate(value))
            elif isinstance(value, str) and value[:1] in "[{" and _json_container(value):
                self.embedded.append(path)
        for bucket in self.by_depth:
            bucket.sort(key=repr)
        self.embedded.sort(key=repr)
        self.keys = sorted(keys)

    def pick_path(self, rng: random.Random) -> Path_:
        bucket = self.by_depth[rng.randrange(len(self.by_depth))]
        return bucket[rng.randrange(len(bucket))]


def _json_container(text: str) -> bool:
    try:
        return isinstance(json.loads(text), (list, dict))
    except (ValueError, RecursionError):
        return False


def _resolve(document: Any, path: Path_) -> tuple[Any, Union[str, int]]:
    """The container holding ``path``'s last step, and that step; KeyError/IndexError/
    TypeError when an earlier mutation removed it."""
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    parent[last]
    return parent, last


def _show(path: Path_) -> str:
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else f".{step}"
    return text.lstrip(".") or "(top)"


def _near_values(value: Any) -> list[tuple[str, Any]]:
    """Values close to ``value`` in kind: what a slightly wrong producer would write."""
    if isinstance(value, bool):
        return [("0/1 for a bool", int(value)), ('"true"', "true")]
    if isinstance(value, int):
        return [("-v", -value), ("v+1", value + 1), ("v*2^32", value * 2**32),
                ("str(v)", str(value)), ("v+0.5", value + 0.5)]  # fmt: skip
    if isinstance(value, float):
        whole = int(value) if value == value and abs(value) < 1e300 else 0
        return [("-v", -value), ("int(v)", whole), ("str(v)", repr(value)),
                ("v*1e300", value * 1e300)]  # fmt: skip
    if isinstance(value, str):
        return [("v*1000", value * 1000), ("v[:1]", value[:1]), ("v+NUL", value + "\x00"),
                ("upper", value.upper())]  # fmt: skip
    if isinstance(value, list):
        return [("v*2", value * 2), ("reversed", value[::-1]), ("[v]", [value])]
    if isinstance(value, dict):
        return [("[v]", [value]), ("values", list(value.values()))]
    return []


def _op_replace(seed: JsonSeed, doc: Any, rng: random.Random) -> str:
    path = seed.pick_path(rng)
    parent, last = _resolve(doc, path)
    choices = HOSTILE + _near_values(parent[last])
    label, value = choices[rng.randrange(len(choices))]
    parent[last] = copy.deepcopy(value)
    return f"{_show(path)} = {label}"


def _op_delete(seed: JsonSeed, doc: Any, rng: random.Random) -> str:
    path = seed.pick_path(rng)
    parent, last = _resolve(doc, path)
    del parent[last]
    return f"delete {_show(path)}"


def _op_duplicate(seed: JsonSeed, doc: Any, rng: random.Random) -> str:
    path = seed.pick_path(rng)
    parent, last = _resolve(doc, path)
    if not isinstance(parent, list):
        raise LookupError("not a list element")
    parent.insert(last, copy.deepcopy(parent[last]))  # type: ignore[arg-type]
    return f"duplicate {_show(path)}"


def _op_swap(seed: JsonSeed, doc: Any, rng: random.Random) -> str:
    path = seed.pick_path(rng)
    parent, last = _resolve(doc, path)
    if not isinstance(parent, list) or len(parent) < 2:
        raise LookupError("no list to swap in")
    other = rng.randrange(len(parent))
    parent[last], parent[other] = parent[other], parent[last]  # type: ignore[index]
    return f"swap {_show(path)} with [{other}]"


def _op_graft(seed: JsonSeed, doc: Any, rng: random.Random) -> str:
    source = seed.pick_path(rng)
    src_parent, src_last = _resolve(doc, source)
    target = seed.pick_path(rng)
    parent, last = _resolve(doc, target)
    parent[last] = copy.deepcopy(src_parent[src_last])
    return f"{_show(target)} = copy of {_show(source)}"


def _op_add_key(seed: JsonSeed, doc: Any, rng: random.Random) -> str:
    path = seed.pick_path(rng)
    parent, last = _resolve(doc, path)
    target = parent[last] if isinstance(parent[last], dict) else parent
    if not isinstance(target, dict):
        raise LookupError("no object to add a key to")
    key = seed.keys[rng.randrange(len(seed.keys))]
    label, value = HOSTILE[rng.randrange(len(HOSTILE))]
    target[key] = copy.deepcopy(value)
    return f"set key {key!r} = {label} near {_show(path)}"


def _op_embedded(seed: JsonSeed, doc: Any, rng: random.Random) -> str:
    """Mutate the JSON inside a string (as PyTorch writes its process-group table)."""
    if not seed.embedded:
        raise LookupError("no JSON in a string")
    path = seed.embedded[rng.randrange(len(seed.embedded))]
    parent, last = _resolve(doc, path)
    if not isinstance(parent[last], str) or not _json_container(parent[last]):
        raise LookupError("an earlier step replaced the JSON string")
    inner = JsonSeed("embedded", json.loads(parent[last]))
    if not inner.by_depth:
        raise LookupError("empty JSON in a string")
    step = _weighted(rng, ((4, _op_replace), (2, _op_delete), (1, _op_graft)))(
        inner, inner.document, rng
    )
    parent[last] = dumps(inner.document).decode("utf-8", "replace")
    return f"in the JSON of {_show(path)}: {step}"


TREE_OPS: Sequence[tuple[int, Callable[[JsonSeed, Any, random.Random], str]]] = (
    (8, _op_replace), (3, _op_delete), (2, _op_duplicate), (1, _op_swap), (2, _op_graft),
    (2, _op_add_key), (1, _op_embedded),
)  # fmt: skip


def _weighted(rng: random.Random, table: Sequence[tuple[int, Any]]) -> Any:
    total = sum(weight for weight, _ in table)
    pick = rng.randrange(total)
    for weight, item in table:
        if pick < weight:
            return item
        pick -= weight
    raise AssertionError("unreachable")


def dumps(document: Any, layout: str = "compact") -> bytes:
    """Serialize a (mutated) document; :class:`Raw` values are spliced in verbatim.

    ``layout``: ``compact`` (one line per element of the top-level object's largest list,
    as a reader of a real trace would see), or ``et_plus``, the line layout the linker writes
    and the converter reads line by line when it can.
    """
    raws: dict[str, bytes] = {}

    def token(value: Any) -> str:
        if isinstance(value, Raw):
            name = f"__chakra_fuzz_raw_{len(raws)}__"
            raws[name] = value.data
            return name
        raise TypeError(f"cannot serialize {type(value).__name__}")

    def encode(value: Any) -> str:
        return json.dumps(value, default=token, separators=(",", ":"))

    if layout == "et_plus" and _has_et_plus_shape(document):
        header = {k: v for k, v in document.items() if k not in ("chakra_link", "nodes")}
        text = (encode(header)[:-1] + ',\n"chakra_link": ' + encode(document["chakra_link"])
                + ',\n"nodes": [' + "".join(("\n" if i == 0 else ",\n") + encode(node)
                                           for i, node in enumerate(document["nodes"]))
                + "\n]}\n")  # fmt: skip
    elif isinstance(document, dict) and _largest_list(document):
        key = _largest_list(document)
        parts = [f"{json.dumps(k)}:{encode(v)}" for k, v in document.items() if k != key]
        items = ",\n".join(encode(item) for item in document[key])
        parts.append(f"{json.dumps(key)}:[\n{items}\n]")
        text = "{" + ",\n".join(parts) + "}\n"
    else:
        text = encode(document)
    data = text.encode("utf-8", "surrogatepass")
    for name, raw in raws.items():
        data = data.replace(f'"{name}"'.encode(), raw)
    return data


def _has_et_plus_shape(document: Any) -> bool:
    return (isinstance(document, dict) and isinstance(document.get("nodes"), list)
            and "chakra_link" in document and list(document)[-1] == "nodes"
            and list(document)[-2] == "chakra_link")  # fmt: skip


def _largest_list(document: dict) -> Optional[str]:
    lists = [(len(v), k) for k, v in document.items() if isinstance(v, list)]
    return max(lists)[1] if lists else None


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
        op = _weighted(rng, BYTE_OPS)
        if not data and op is not _whole:
            continue
        try:
            data, label = op(data, rng)
        except LookupError:
            continue
        mutation.steps.append(label)
        return data
    return data


def _count(rng: random.Random) -> int:
    roll = rng.randrange(10)
    return 1 if roll < 7 else 2 if roll < 9 else 3


def mutate_json(seed: JsonSeed, rng: random.Random) -> tuple[bytes, Mutation]:
    """A mutant of a JSON seed: tree operations, then maybe one on its bytes."""
    mutation = Mutation(seed.name)
    document = copy.deepcopy(seed.document)
    wanted = _count(rng)
    byte_level = rng.randrange(5) == 0
    tree_ops = wanted - 1 if byte_level else wanted
    tries = 0
    while len(mutation.steps) < tree_ops and tries < 20:
        tries += 1
        op = _weighted(rng, TREE_OPS)
        try:
            mutation.steps.append(op(seed, document, rng))
        except (LookupError, TypeError, RecursionError):
            continue
    data = dumps(document, seed.layout)
    if byte_level:
        data = mutate_bytes(data, rng, mutation)
    return data, mutation


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
        damaged, label = _weighted(rng, GZIP_OPS)(gz, data, rng)
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
    for _ in range(_count(rng)):
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
