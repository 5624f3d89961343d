"""ASTRA-sim text workloads (``chakra_converter Text``): parse, expand per NPU, write ETs."""

from typing import TYPE_CHECKING

from chakra import lazy_exports

if TYPE_CHECKING:  # imported on first use (a command's --help loads none of them)
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

#: Each public name's module, imported on first use (:func:`chakra.lazy_exports`).
_MODULE_OF = {
    "SCHEMA": "convert",
    "convert_text": "convert",
    "build_npu_graph": "graph",
    "COMM_TYPES": "workload",
    "Layer": "workload",
    "Parallelism": "workload",
    "Phase": "workload",
    "TextWorkloadError": "workload",
    "Workload": "workload",
    "parse_workload": "workload",
}
__getattr__ = lazy_exports(__name__, _MODULE_OF)

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
