"""How ``chakra_visualizer`` shows a node: a short label and a fill colour by resource.

A label (:meth:`VizNode.label`) has three lines: the node's short name (:func:`short_name`),
its type and resource (``COMP · stream 7``, ``COMM_COLL · thread 3``) and its duration in
µs; a run of GPU ops folded into one node (``--collapse-gpu``) says how many and their ids.
The fill says where the node runs, as the simulator places it
(``chakra.simulate.sim_graph``): host ops (``is_cpu_op``, the default, or ``runs_on_host``)
on their thread ``tid``, in shades of blue; GPU nodes on their ``stream`` (``d1 stream 7``
on a device other than 0), one hue per stream from pastel greens, yellows and purples;
communication nodes (collectives, sends, receives) in reds and oranges, one per resource,
wherever they run; a host node without ``tid`` (the converter's ``[delay]``) holds no
resource and is white. Colours are given in the order of the resources' keys, so one graph
always gets the same ones.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Optional

from chakra.et.attributes import get_bool_attr, get_int_attr
from chakra.et.schema import NodeType

#: Longest short name shown; longer ones end in an ellipsis (the whole name is a tooltip).
MAX_NAME_CHARS = 40
COMM_TYPES = frozenset(
    {int(NodeType.COMM_COLL_NODE), int(NodeType.COMM_SEND_NODE), int(NodeType.COMM_RECV_NODE)}
)
#: Fill colours of each family, given to its resources in order (then again from the start).
PALETTES = {
    "cpu": ("#9ecae1", "#c6dbef", "#6baed6", "#deebf7", "#4292c6"),
    "gpu": ("#ccebc5", "#ffffb3", "#bebada", "#b3de69", "#fddaec", "#e5d8bd", "#8dd3c7"),
    "comm": ("#fb8072", "#fdb462", "#f4a582", "#fc9272", "#d6604d"),
}
NO_RESOURCE_FILL = "#ffffff"
FAMILY_NAMES = {"cpu": "CPU", "gpu": "GPU", "comm": "communication on"}
_CLOSING = {"(": ")", "<": ">"}


def ellipsize(text: str, limit: int = MAX_NAME_CHARS) -> str:
    """``text``, cut to ``limit`` characters with a final ``…`` when longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _attached(name: str, position: int) -> bool:
    """Whether the bracket at ``position`` follows an identifier (a call or template)."""
    return position > 0 and (name[position - 1].isalnum() or name[position - 1] in "_>")


def _signature_head(name: str) -> Optional[str]:
    """The top-level text of a demangled C++ signature before its parameter list, with every
    bracketed group (template arguments, ``(anonymous namespace)``) left out; None when
    ``name`` has neither template arguments nor a parameter list attached to an identifier.
    Inside parentheses only parentheses nest (``->`` or ``operator<`` do not count)."""
    kept: list[str] = []
    stack: list[str] = []
    signature = False
    for position, char in enumerate(name):
        if stack:
            if char == "(" or (char == "<" and stack[-1] == ">"):
                stack.append(_CLOSING[char])
            elif char == stack[-1]:
                stack.pop()
            continue
        if char == "(" and _attached(name, position):
            return "".join(kept)  # the parameter list: cv-qualifiers and the rest follow
        if char == "(" or (char == "<" and _attached(name, position)):
            signature = signature or char == "<"
            stack.append(_CLOSING[char])
        else:
            kept.append(char)
    return "".join(kept) if signature else None


def short_name(name: str, limit: int = MAX_NAME_CHARS) -> str:
    """A demangled C++ kernel or function name without return type, namespaces, template
    arguments and parameter list: ``void at::native::vectorized_elementwise_kernel<4,
    at::native::CUDAFunctor_add<float>, ...>(int, ...)`` → ``vectorized_elementwise_kernel``.
    Other names (``aten::add``, ``ProfilerStep#1``, ``Memcpy HtoD (Pinned -> Device)``)
    stay as they are. Either is cut to ``limit`` characters (:func:`ellipsize`)."""
    head = _signature_head(name)
    words = head.split() if head is not None else []
    short = next((part for part in reversed(words[-1].split("::")) if part), "") if words else ""
    return ellipsize(short or name, limit)


def node_type_name(node_type: int) -> str:
    """``COMP``, ``COMM_COLL``, ... (the ``NodeType`` name without ``_NODE``)."""
    try:
        return NodeType(node_type).name.removesuffix("_NODE")
    except ValueError:
        return f"type {node_type}"


def format_us(value: float) -> str:
    """``8.516 µs``, ``1,250 µs``: µs with up to 3 decimals (ns), trailing zeros dropped."""
    return f"{value:,.3f}".rstrip("0").rstrip(".") + " µs"


def duration_us(node: Any) -> float:
    """A node's duration in µs: its ``duration_ns`` attribute when present (exact), else
    ``duration_micros``."""
    nanos = get_int_attr(node, "duration_ns")
    return nanos / 1000.0 if nanos is not None else float(node.duration_micros)


@dataclass(frozen=True)
class Placement:
    """Where a node runs: ``family`` is ``cpu``, ``gpu`` or ``comm`` (communication nodes,
    wherever they run); ``resource`` names its thread or stream (None: it holds none);
    ``key`` orders resources of one family."""

    family: str
    resource: Optional[str]
    key: tuple


def placement(node: Any) -> Placement:
    """The resource of ``node`` as the simulator chooses it (see the module's text)."""
    family = "comm" if node.type in COMM_TYPES else None
    on_host = get_bool_attr(node, "is_cpu_op", True) or get_bool_attr(node, "runs_on_host", False)
    if on_host:
        tid = get_int_attr(node, "tid")
        if tid is None:
            return Placement(family or "cpu", None, ())
        return Placement(family or "cpu", f"thread {tid}", (0, tid))
    device = get_int_attr(node, "device", 0)
    stream = get_int_attr(node, "stream")
    prefix = f"d{device} " if device else ""
    resource = f"{prefix}stream {stream}" if stream is not None else f"{prefix}gpu"
    return Placement(family or "gpu", resource, (1, device, -1 if stream is None else stream))


def fills(placements: Iterable[Placement]) -> dict[Placement, str]:
    """A fill colour for each distinct placement: per family, its palette's colours in
    the order of the resources' keys; white for nodes holding no resource."""
    distinct = sorted(set(placements), key=lambda p: (p.family, p.resource is None, p.key))
    colours: dict[Placement, str] = {}
    used = dict.fromkeys(PALETTES, 0)
    for place in distinct:
        if place.resource is None and place.family != "comm":
            colours[place] = NO_RESOURCE_FILL
            continue
        palette = PALETTES[place.family]
        colours[place] = palette[used[place.family] % len(palette)]
        used[place.family] += 1
    return colours


def legend_text(place: Placement) -> str:
    """The legend's words for a fill: ``CPU thread 1``, ``GPU stream 7``,
    ``communication on stream 20``, ``no resource``."""
    if place.resource is None:
        return "communication" if place.family == "comm" else "no resource"
    return f"{FAMILY_NAMES[place.family]} {place.resource}"


@dataclass(frozen=True)
class VizNode:
    """What the drawing needs of one node: ``type`` is the ``NodeType`` name without
    ``_NODE``, ``duration_us`` from ``duration_ns`` when present. A folded run of GPU ops
    (:mod:`chakra.tools.visualize_fold`) is one VizNode whose ``id`` is its first op's,
    ``last_id`` its last op's and ``ops`` their count; deps are then the run's."""

    id: int
    name: str
    data_deps: tuple[int, ...]
    ctrl_deps: tuple[int, ...]
    type: str
    place: Placement
    duration_us: float
    ops: int = 1
    last_id: Optional[int] = None

    def label(self) -> str:
        """Three lines: short name (a folded run: its op count and ids); type and resource;
        duration (a folded run: the sum of its ops')."""
        where = f"{self.type} · {self.place.resource}" if self.place.resource else self.type
        head = short_name(self.name) if self.ops == 1 else f"{self.ops:,} ops · {self.ids()}"
        return f"{head}\n{where}\n{format_us(self.duration_us)}"

    def ids(self) -> str:
        """``id 7``, or a folded run's ``ids 7-19``."""
        return f"id {self.id}" if self.last_id is None else f"ids {self.id}-{self.last_id}"
