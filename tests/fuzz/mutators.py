"""Structure-aware mutants of JSON traces (host ET, Kineto, ET+, Chrome traces); bytes, gzip
and text: :mod:`tests.fuzz.stream_mutators`; ``.et`` files: :mod:`tests.fuzz.et_mutators`.

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
from collections.abc import Sequence
from typing import Any, Callable, Optional, Union

from tests.fuzz.stream_mutators import Mutation, count, mutate_bytes, weighted

__all__ = ["HOSTILE", "JsonSeed", "Mutation", "Raw", "dumps", "mutate_json", "weighted"]

Path_ = tuple[Union[str, int], ...]


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
    step = weighted(rng, ((4, _op_replace), (2, _op_delete), (1, _op_graft)))(
        inner, inner.document, rng
    )
    parent[last] = dumps(inner.document).decode("utf-8", "replace")
    return f"in the JSON of {_show(path)}: {step}"


#: Roots that may name themselves as their parent (chakra.ingest.parent_cycles): not a cycle.
_SELF_PARENT_NAMES = frozenset(
    f"[pytorch|profiler|{kind}|{level}]"
    for kind in ("execution_trace", "execution_graph") for level in ("process", "thread")
) | {"__ROOT_PROCESS__", "__ROOT_THREAD__"}  # fmt: skip


def _op_parent_cycle(seed: JsonSeed, doc: Any, rng: random.Random) -> str:
    """Make one to three nodes of a host ET or ET+ each other's parents (``ctrl_deps``,
    ``parent`` in 1.0.1, or an ET+ node's ``ran_under``): a ring, or a node naming itself."""
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    if not isinstance(nodes, list):
        raise LookupError("no nodes")
    candidates = [
        node for node in nodes
        if isinstance(node, dict) and type(node.get("id")) is int
        and ("ctrl_deps" in node or "parent" in node)
        and node.get("name") not in _SELF_PARENT_NAMES
    ]  # fmt: skip
    if not candidates:
        raise LookupError("no node with a parent")
    ring = rng.sample(candidates, min(1 + rng.randrange(3), len(candidates)))
    keys = []
    for child, parent in zip(ring, ring[1:] + ring[:1]):
        key = "ctrl_deps" if "ctrl_deps" in child else "parent"
        if "ran_under" in child and rng.randrange(2):
            key = "ran_under"
        child[key] = parent["id"]
        keys.append(key)
    shown = " -> ".join(f"{n['id']} ({k})" for n, k in zip(ring, keys))
    return f"parent cycle {shown} -> {ring[0]['id']}"


TREE_OPS: Sequence[tuple[int, Callable[[JsonSeed, Any, random.Random], str]]] = (
    (8, _op_replace), (3, _op_delete), (2, _op_duplicate), (1, _op_swap), (2, _op_graft),
    (2, _op_add_key), (1, _op_embedded), (1, _op_parent_cycle),
)  # fmt: skip


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


def mutate_json(seed: JsonSeed, rng: random.Random) -> tuple[bytes, Mutation]:
    """A mutant of a JSON seed: tree operations, then maybe one on its bytes."""
    mutation = Mutation(seed.name)
    document = copy.deepcopy(seed.document)
    wanted = count(rng)
    byte_level = rng.randrange(5) == 0
    tree_ops = wanted - 1 if byte_level else wanted
    tries = 0
    while len(mutation.steps) < tree_ops and tries < 20:
        tries += 1
        op = weighted(rng, TREE_OPS)
        try:
            mutation.steps.append(op(seed, document, rng))
        except (LookupError, TypeError, RecursionError):
            continue
    data = dumps(document, seed.layout)
    if byte_level:
        data = mutate_bytes(data, rng, mutation)
    return data, mutation
