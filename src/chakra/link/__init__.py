"""Link a host execution trace with its Kineto trace into ET+ (host ops with their measured
timing, GPU ops as child nodes with their stream, and the evidence of every dependency)."""

from chakra.link.linker import LinkError, link_traces
from chakra.link.model import (
    Edge,
    EdgeKind,
    GpuNode,
    JoinStrategy,
    LinkedTrace,
    LinkOptions,
    LinkReport,
)

__all__ = [
    "Edge",
    "EdgeKind",
    "GpuNode",
    "JoinStrategy",
    "LinkError",
    "LinkOptions",
    "LinkReport",
    "LinkedTrace",
    "link_traces",
]
