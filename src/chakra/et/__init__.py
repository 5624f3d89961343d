"""Chakra ET files: schema classes, streaming reader, atomic writer, attribute helpers."""

from chakra.et.attributes import (
    ATTRIBUTE_KINDS,
    add_attr,
    attr_kind,
    attr_value,
    find_attr,
    get_attr,
    get_bool_attr,
    get_int_attr,
    get_str_attr,
    make_attr,
    set_attr,
)
from chakra.et.reader import EtReader, read_et
from chakra.et.schema import (
    AttributeProto,
    CollectiveCommType,
    GlobalMetadata,
    IOInfo,
    Node,
    NodeType,
    Tensor,
)
from chakra.et.writer import EtWriter, write_et

__all__ = [
    "ATTRIBUTE_KINDS",
    "AttributeProto",
    "CollectiveCommType",
    "EtReader",
    "EtWriter",
    "GlobalMetadata",
    "IOInfo",
    "Node",
    "NodeType",
    "Tensor",
    "add_attr",
    "attr_kind",
    "attr_value",
    "find_attr",
    "get_attr",
    "get_bool_attr",
    "get_int_attr",
    "get_str_attr",
    "make_attr",
    "read_et",
    "set_attr",
    "write_et",
]
