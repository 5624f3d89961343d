"""Convert ET+ (linked host + device traces) into Chakra ET protobuf graphs."""

from chakra.convert.converter import (
    ConvertOptions,
    ConvertReport,
    EtGraph,
    convert_et_plus,
    convert_file,
)
from chakra.convert.et_plus_input import EtPlusTrace, load_et_plus

__all__ = [
    "ConvertOptions",
    "ConvertReport",
    "EtGraph",
    "EtPlusTrace",
    "convert_et_plus",
    "convert_file",
    "load_et_plus",
]
