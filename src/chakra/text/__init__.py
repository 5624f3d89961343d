"""ASTRA-sim text workloads (``chakra_converter Text``): parse, expand per NPU, write ETs."""

from chakra.text.convert import SCHEMA, convert_text
from chakra.text.graph import build_npu_graph
from chakra.text.workload import (
    COMM_TYPES,
    Layer,
    Parallelism,
    Phase,
    TextWorkloadError,
    Workload,
    parse_workload,
)

__all__ = [
    "COMM_TYPES",
    "SCHEMA",
    "Layer",
    "Parallelism",
    "Phase",
    "TextWorkloadError",
    "Workload",
    "build_npu_graph",
    "convert_text",
    "parse_workload",
]
