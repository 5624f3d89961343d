"""Instance qualifiers of a what-if rule: ``TARGET@QUALIFIER...=FACTOR`` narrows a rule's
target (a class, ``name:TEXT`` or a name pattern) to some instances of it.

Each qualifier starts with ``@WORD:``; every qualifier given must hold; none needs a comma
outside brackets (``--what-if`` splits its rules at the other commas):

* ``@shape:[8,16]`` (or ``@shape:8x16``): some input has this shape (a member of a tensor
  list counts); ``*`` stands for any one dimension (``[*,16]``), ``[]`` for a scalar.
* ``@shape:[[48],[8,16],[16,48],[],[]]``: the whole list of input shapes, as the trace
  writes it (``inputs.shapes`` in ``chakra_jsonizer``'s output); ``*`` is any one input.
  A pattern is a whole list when one of its elements is a list. Spaces are ignored.
* ``@scope:PATTERN``: an enclosing op's name matches PATTERN (a shell pattern, as names
  are matched: ``[`` and ``]`` stand for themselves): an ancestor over ``ctrl_deps``
  (a ``record_function`` label, a module annotation, ``ProfilerStep#N``). A GPU kernel's
  ancestors are its launching op and that op's; a later segment of a host op (``segment_of``)
  has the op's. A parent the converter left out (it would close a cycle) ends the chain.
* ``@rank:0``, ``@rank:0|2``, ``@rank:4-7``: only on these ranks (given once).
* ``@class:gpu`` (``compute``, ``comm``, ``cpu`` or ``gpu``): also in that class, so
  ``compute@class:gpu`` is the GPU ops that do not communicate (kernels, copies) and
  ``comm@class:cpu`` the host collectives (gloo).

What they read, and its cost: names, parents (each node's first ``ctrl_deps``) and
``segment_of`` are in :class:`~chakra.simulate.sim_graph.SimGraph` already; input shapes are
not read at load (loading keeps its speed): :func:`with_instance_facts` reads them from the
graph's file in one more pass, for a rank whose rules ask for shapes, and keeps them on the
copy it returns. Shape patterns are tried once per distinct shape text; scopes by pointer
doubling over the parent array, O(n log depth) with numpy.
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any, Optional

import msgspec
import numpy as np

from chakra.errors import ScaleRuleError
from chakra.ingest.name_patterns import matching_names
from chakra.simulate.node_files import read_nodes
from chakra.simulate.resources import gpu_mask
from chakra.simulate.sim_graph import SimGraph

#: Where a qualifier starts: ``@`` then a word and a colon (another ``@`` is part of a name).
QUALIFIER = re.compile(r"@(?=[A-Za-z_]+:)")
KINDS = ("shape", "scope", "rank", "class")
_EXAMPLES = {"shape": "@shape:[8,256] or @shape:[[8,256],[256,512]]",
             "scope": "@scope:*layers.1*", "rank": "@rank:0, @rank:0|2 or @rank:4-7",
             "class": "@class:gpu (compute, comm, cpu or gpu)"}  # fmt: skip
_CLASSES = ("compute", "comm", "cpu", "gpu")
_X_SHAPE = re.compile(r"(?:\d+|\*)(?:x(?:\d+|\*))*")
_RANK = re.compile(r"(\d+)(?:-(\d+))?")
_MAX_ID = (1 << 63) - 1


class ShapePattern(msgspec.Struct, frozen=True):
    """One ``@shape:`` qualifier: ``pattern``, JSON (spaces out, ``*`` as ``null``);
    ``whole``: it is the full list of input shapes, else the shape of some one input."""

    pattern: str
    whole: bool

    @classmethod
    def parse(cls, text: str) -> ShapePattern:
        """Raises ScaleRuleError when ``text`` is no shape nor list of shapes."""
        compact = "".join(text.split())
        if _X_SHAPE.fullmatch(compact):
            compact = "[" + compact.replace("x", ",") + "]"
        try:
            value = json.loads(compact.replace("*", "null"))
        except (ValueError, RecursionError):
            value = None
        if not isinstance(value, list) or not _well_formed(value):
            raise ScaleRuleError(
                f"@shape:{text} is not a shape; expected e.g. {_EXAMPLES['shape']} "
                "(* for any one dimension or input)"
            )
        whole = any(isinstance(item, list) for item in value)
        return cls(json.dumps(value, separators=(",", ":")), whole)

    def hits(self, texts: Iterable[str]) -> set[str]:
        """Those of ``texts`` (nodes' ``inputs.shapes``) this pattern matches; a text that
        is not JSON matches nothing."""
        want = json.loads(self.pattern)
        out = set()
        for text in texts:
            try:
                got = json.loads(text) if text else []
            except (ValueError, RecursionError):
                continue
            if _same(want, got) if self.whole else _has_shape(want, got):
                out.add(text)
        return out


class RankSpan(msgspec.Struct, frozen=True):
    """Ranks ``low`` to ``high``, both included."""

    low: int
    high: int


class Qualifiers(msgspec.Struct, frozen=True):
    """The qualifiers of one rule; a node must satisfy all of them. ``ranks`` empty: every
    rank."""

    shapes: tuple[ShapePattern, ...] = ()
    scopes: tuple[str, ...] = ()
    ranks: tuple[RankSpan, ...] = ()
    classes: tuple[str, ...] = ()

    @classmethod
    def parse(cls, parts: Sequence[str]) -> Qualifiers:
        """From the texts after each ``@`` (``shape:[8,16]``). Raises ScaleRuleError saying
        what is wrong with the first bad one."""
        shapes, scopes, ranks, classes = [], [], None, []
        for part in parts:
            word, _, value = part.partition(":")
            if word not in KINDS:
                raise ScaleRuleError(
                    f"unknown qualifier @{word}: (expected @shape:, @scope:, @rank: or @class:)"
                )
            value = value.strip()
            if not value or (word == "class" and value not in _CLASSES):
                raise ScaleRuleError(f"@{word}:{value} needs a value, e.g. {_EXAMPLES[word]}")
            if word == "shape":
                shapes.append(ShapePattern.parse(value))
            elif word == "scope":
                scopes.append(value)
            elif word == "class":
                classes.append(value)
            elif ranks is not None:
                raise ScaleRuleError("@rank: is given twice; name several ranks as @rank:0|2")
            else:
                ranks = _rank_spans(value)
        return cls(tuple(shapes), tuple(scopes), ranks or (), tuple(classes))

    def on_rank(self, rank: int) -> bool:
        """Whether nodes of ``rank`` can match."""
        return not self.ranks or any(s.low <= rank <= s.high for s in self.ranks)

    def narrow(self, graph: SimGraph, mask: np.ndarray) -> np.ndarray:
        """``mask`` (a rule's target in ``graph``) less the nodes a qualifier excludes. Reads
        input shapes from the graph's file when it has none (:func:`with_instance_facts`)."""
        if not self.on_rank(graph.rank):
            return np.zeros_like(mask)
        for name in self.classes:
            mask = mask & class_mask(graph, name)
        if not (self.shapes or self.scopes) or not mask.any():
            return mask
        graph = with_instance_facts(graph, [self])
        owner = _owners(graph)
        out = mask.copy()
        if self.shapes:
            out &= _shape_mask(graph, self.shapes, owner, out)
        for scope in self.scopes:
            out &= _scope_mask(graph, scope, owner)
        return out


def class_mask(graph: SimGraph, name: str) -> np.ndarray:
    """The nodes of class ``name``: ``comm`` the communication nodes, ``compute`` the
    others; ``gpu`` the nodes on a GPU stream, ``cpu`` the others."""
    if name in ("comm", "compute"):
        comm = np.zeros(len(graph.ids), bool)
        comm[list(graph.comm)] = True
        return comm if name == "comm" else ~comm
    resource = np.frombuffer(graph.resource, dtype=np.int64)
    on_gpu = gpu_mask(graph.resources)[resource]  # NO_RESOURCE (-1) picks the extra False
    return on_gpu if name == "gpu" else ~on_gpu


def _rank_spans(text: str) -> tuple[RankSpan, ...]:
    spans = []
    for part in text.split("|"):
        found = _RANK.fullmatch(part.strip())
        low = int(found.group(1)) if found else -1
        high = int(found.group(2) or low) if found else -1
        if not found or high < low:
            raise ScaleRuleError(f"@rank:{text}: expected {_EXAMPLES['rank']}")
        spans.append(RankSpan(low, high))
    return tuple(spans)


def _well_formed(value: list) -> bool:
    """Lists of integers, ``None`` (``*``) and such lists, at any depth."""
    stack = [value]
    while stack:
        for item in stack.pop():
            if isinstance(item, list):
                stack.append(item)
            elif item is not None and item.__class__ is not int:
                return False
    return True


def _same(want: Any, got: Any) -> bool:
    """``got`` has ``want``'s structure and integers; ``None`` in ``want`` matches any one
    element."""
    stack = [(want, got)]
    while stack:
        w, g = stack.pop()
        if w is None:
            continue
        if isinstance(w, list):
            if not isinstance(g, list) or len(g) != len(w):
                return False
            stack.extend(zip(w, g))
        elif g.__class__ is not int or g != w:
            return False
    return True


def _has_shape(want: list, got: Any) -> bool:
    """Some list inside ``got`` (an input's shape, or a member of a tensor list) is ``want``."""
    stack = [got] if isinstance(got, list) else []
    while stack:
        for item in stack.pop():
            if isinstance(item, list):
                if _same(want, item):
                    return True
                stack.append(item)
    return False


def _positions(graph: SimGraph, wanted: np.ndarray) -> np.ndarray:
    """The position of the node with each id of ``wanted`` (-1: no such node)."""
    ids = np.frombuffer(graph.ids, dtype=np.int64) if len(graph.ids) else np.zeros(0, np.int64)
    if not len(ids):
        return np.full(len(wanted), -1, dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    at = np.minimum(np.searchsorted(ordered, wanted), len(ids) - 1)
    return np.where(ordered[at] == wanted, order[at], -1)


def _owners(graph: SimGraph) -> np.ndarray:
    """Each node's op: the node itself, or for a later segment the op it is part of."""
    owner = np.arange(len(graph.ids), dtype=np.int64)
    if graph.segment_of:
        segments = np.fromiter(graph.segment_of, np.int64, len(graph.segment_of))
        ops = np.fromiter(graph.segment_of.values(), np.int64, len(graph.segment_of))
        found = _positions(graph, ops)
        owner[segments[found >= 0]] = found[found >= 0]
    return owner


def _shape_mask(
    graph: SimGraph, shapes: Sequence[ShapePattern], owner: np.ndarray, mask: np.ndarray
) -> np.ndarray:
    """The nodes of ``mask`` whose op's input shapes match every pattern of ``shapes``."""
    texts = graph.input_shapes or []
    picked = np.flatnonzero(mask)
    ops = owner[picked].tolist()
    hits = [pattern.hits({texts[op] for op in ops}) for pattern in shapes]
    keep = np.fromiter((all(texts[op] in h for h in hits) for op in ops), bool, len(ops))
    out = np.zeros(len(mask), bool)
    out[picked[keep]] = True
    return out


def _scope_mask(graph: SimGraph, scope: str, owner: np.ndarray) -> np.ndarray:
    """The nodes with an ancestor of their op whose name matches ``scope``."""
    names = graph.names
    hits = matching_names(scope, names)
    direct = np.fromiter((n in hits for n in names), bool, len(names))
    parents = np.frombuffer(graph.parent_id, dtype=np.int64) if graph.parent_id else []
    parent = _positions(graph, np.asarray(parents, dtype=np.int64))
    return _below(direct, parent)[owner]


def _below(direct: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """For each node, whether some ancestor (parent, its parent...) is ``direct``. Pointer
    doubling: after round k each node has looked 2^k ancestors up; a cycle ends in
    log2(n) + 1 rounds."""
    count = len(direct)
    jump = np.append(np.where(parent >= 0, parent, count), count)  # count: no parent
    seen = np.append(direct, False)[jump]  # the parent is a match
    for _ in range(count.bit_length() + 1):
        if (jump == count).all():
            break
        seen = seen | seen[jump]
        jump = jump[jump]
    return seen[:count]


class _Facts(msgspec.Struct, frozen=True):
    ids: array
    shapes: list[str]
    parent_id: Optional[array] = None
    segment_of: Optional[dict[int, int]] = None


def _read_facts(nodes: Iterable[Any], rank: int, parents: bool = False) -> _Facts:
    """Each node's id and ``inputs.shapes`` (one string object per distinct text) and, with
    ``parents``, its first ``ctrl_deps`` and ``segment_of``."""
    ids, shapes, seen = array("q"), [], {}
    parent_id, segment_of = array("q"), {}
    for position, node in enumerate(nodes):
        ids.append(node.id)
        text = node.inputs.shapes
        shapes.append(seen.setdefault(text, text))
        if parents:
            ctrl = node.ctrl_deps
            parent_id.append(ctrl[0] if ctrl and ctrl[0] <= _MAX_ID else -1)
            for attr in node.attr:
                if attr.name == "segment_of" and attr.WhichOneof("value") == "int64_val":
                    segment_of[position] = attr.int64_val
    if parents:
        return _Facts(ids, shapes, parent_id, segment_of)
    return _Facts(ids, shapes)


def with_instance_facts(graph: SimGraph, wheres: Iterable[Optional[Qualifiers]]) -> SimGraph:
    """``graph``, or a copy with what the qualifiers ``wheres`` (None: a rule without any)
    read and it lacks on its rank: input shapes, and parents for a graph built without them
    (ASTRA-sim's), read again from ``graph.source`` in one pass. Raises ScaleRuleError for a
    graph built in memory (see :func:`with_input_shapes`) or a file whose nodes changed."""
    wanted = [w for w in wheres if w is not None and w.on_rank(graph.rank)]
    shapes = graph.input_shapes is None and any(w.shapes for w in wanted)
    parents = graph.parent_id is None and any(w.scopes for w in wanted)
    if not (shapes or parents):
        return graph
    if not graph.source:
        raise ScaleRuleError(
            f"{graph.where()}: @shape: and @scope: read input shapes and parents, which a graph "
            "built from nodes in memory does not keep: load it from a file, or add them "
            "with with_input_shapes"
        )
    facts = read_nodes(graph.source, graph.rank, partial(_read_facts, parents=parents))
    return _with_facts(graph, facts)


def with_input_shapes(graph: SimGraph, nodes: Iterable[Any]) -> SimGraph:
    """``graph`` with the input shapes of ``nodes``, the nodes it was built from (same
    order), for ``@shape:`` rules on a graph built in memory."""
    return _with_facts(graph, _read_facts(nodes, graph.rank))


def _with_facts(graph: SimGraph, facts: _Facts) -> SimGraph:
    if facts.ids != graph.ids:
        raise ScaleRuleError(
            f"{graph.where()}: the nodes read for @shape: or @scope: are not the graph's "
            "(the file changed since it was loaded?)"
        )
    return msgspec.structs.replace(
        graph,
        input_shapes=facts.shapes,
        parent_id=graph.parent_id if graph.parent_id is not None else facts.parent_id,
        segment_of=graph.segment_of if graph.segment_of is not None else facts.segment_of,
    )
