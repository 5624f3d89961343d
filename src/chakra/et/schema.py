"""Message classes and enums of the Chakra ET schema (``schema/protobuf/et_def.proto``).

The classes are built at import time from the compiled descriptor checked in as
``et_def_descriptor.py``, in a descriptor pool of this package's own. This uses only protobuf
APIs that are stable from 4.21 to 7.x, so no generated ``_pb2`` module can disagree with the
installed runtime, and another copy of ``et_def.proto`` loaded into protobuf's default pool
(for example by the reference tools) cannot clash with ours. See ``docs/protobuf.md``.
"""

from __future__ import annotations

import enum
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from chakra.et.et_def_descriptor import SERIALIZED_FILE_DESCRIPTOR

PROTO_PACKAGE = "ChakraProtoMsg"

_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(descriptor_pb2.FileDescriptorProto.FromString(SERIALIZED_FILE_DESCRIPTOR))
FILE_DESCRIPTOR = _POOL.FindFileByName("et_def.proto")


def message_class(name: str) -> Any:
    """The message class of ``ChakraProtoMsg.<name>`` in this package's descriptor pool."""
    descriptor = _POOL.FindMessageTypeByName(f"{PROTO_PACKAGE}.{name}")
    get_class = getattr(message_factory, "GetMessageClass", None)
    if get_class is not None:  # protobuf >= 4.22
        return get_class(descriptor)
    return message_factory.MessageFactory(_POOL).GetPrototype(descriptor)  # 4.21


GlobalMetadata: Any = message_class("GlobalMetadata")
Node: Any = message_class("Node")
IOInfo: Any = message_class("IOInfo")
AttributeProto: Any = message_class("AttributeProto")
Tensor: Any = message_class("Tensor")

#: Element kinds of the ``AttributeProto.value`` oneof, in field-number order: each has a
#: scalar member ``<kind>_val`` and a list member ``<kind>_list``.
VALUE_KINDS = (
    "double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
    "fixed32", "fixed64", "sfixed32", "sfixed64", "bool", "string", "bytes",
)  # fmt: skip
#: Element kinds holding an integer.
INTEGER_VALUE_KINDS = VALUE_KINDS[2:12]


class NodeType(enum.IntEnum):
    """``Node.type`` values (wire numbers of the ``NodeType`` enum)."""

    INVALID_NODE = 0
    METADATA_NODE = 1
    MEM_LOAD_NODE = 2
    MEM_STORE_NODE = 3
    COMP_NODE = 4
    COMM_SEND_NODE = 5
    COMM_RECV_NODE = 6
    COMM_COLL_NODE = 7


class CollectiveCommType(enum.IntEnum):
    """Values of the ``comm_type`` attribute (the schema's ``CollectiveCommType`` enum)."""

    ALL_REDUCE = 0
    REDUCE = 1
    ALL_GATHER = 2
    GATHER = 3
    SCATTER = 4
    BROADCAST = 5
    ALL_TO_ALL = 6
    REDUCE_SCATTER = 7
    REDUCE_SCATTER_BLOCK = 8
    BARRIER = 9
