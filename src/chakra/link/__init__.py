"""Link a host execution trace with its Kineto trace into ET+ (host ops with their measured
timing, GPU ops as child nodes with their stream, and the evidence of every dependency)."""

from chakra.link.et_plus import as_et_plus, write_et_plus
from chakra.link.linked_trace import (
    Edge,
    EdgeKind,
    GpuNode,
    JoinStrategy,
    LinkedTrace,
    LinkOptions,
    LinkReport,
)
from chakra.link.linker import LinkError, link_traces

__all__ = [
    "Edge",
    "EdgeKind",
    "GpuNode",
    "JoinStrategy",
    "LinkError",
    "LinkOptions",
    "LinkReport",
    "LinkedTrace",
    "as_et_plus",
    "link_traces",
    "write_et_plus",
]
