"""What the reference's generated ``chakra.schema.protobuf.et_def_pb2`` exports, for scripts
written against it (ASTRA-sim's workload generators, for one).

The message classes are those of :mod:`chakra.et.schema` (built from the same ``et_def.proto``
in this package's own descriptor pool): ``GlobalMetadata``, ``Node``, ``AttributeProto``,
``IOInfo``, ``Tensor`` and the ``<Kind>List`` messages. ``NodeType`` and
``CollectiveCommType`` are protobuf enum wrappers (``NodeType.Value("COMP_NODE")``,
``NodeType.Name(4)``), and every enum value is also a module constant (``COMM_COLL_NODE``,
``ALL_REDUCE``...), as protoc writes them. New code should import from :mod:`chakra.et`.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from chakra.et.schema import FILE_DESCRIPTOR, message_class

DESCRIPTOR = FILE_DESCRIPTOR

AttributeProto: Any = message_class("AttributeProto")
DoubleList: Any = message_class("DoubleList")
FloatList: Any = message_class("FloatList")
Int32List: Any = message_class("Int32List")
Int64List: Any = message_class("Int64List")
Uint32List: Any = message_class("Uint32List")
Uint64List: Any = message_class("Uint64List")
Sint32List: Any = message_class("Sint32List")
Sint64List: Any = message_class("Sint64List")
Fixed32List: Any = message_class("Fixed32List")
Fixed64List: Any = message_class("Fixed64List")
Sfixed32List: Any = message_class("Sfixed32List")
Sfixed64List: Any = message_class("Sfixed64List")
BoolList: Any = message_class("BoolList")
StringList: Any = message_class("StringList")
BytesList: Any = message_class("BytesList")
GlobalMetadata: Any = message_class("GlobalMetadata")
Node: Any = message_class("Node")
IOInfo: Any = message_class("IOInfo")
Tensor: Any = message_class("Tensor")

NodeType = EnumTypeWrapper(FILE_DESCRIPTOR.enum_types_by_name["NodeType"])
CollectiveCommType = EnumTypeWrapper(FILE_DESCRIPTOR.enum_types_by_name["CollectiveCommType"])

INVALID_NODE = NodeType.Value("INVALID_NODE")
METADATA_NODE = NodeType.Value("METADATA_NODE")
MEM_LOAD_NODE = NodeType.Value("MEM_LOAD_NODE")
MEM_STORE_NODE = NodeType.Value("MEM_STORE_NODE")
COMP_NODE = NodeType.Value("COMP_NODE")
COMM_SEND_NODE = NodeType.Value("COMM_SEND_NODE")
COMM_RECV_NODE = NodeType.Value("COMM_RECV_NODE")
COMM_COLL_NODE = NodeType.Value("COMM_COLL_NODE")

ALL_REDUCE = CollectiveCommType.Value("ALL_REDUCE")
REDUCE = CollectiveCommType.Value("REDUCE")
ALL_GATHER = CollectiveCommType.Value("ALL_GATHER")
GATHER = CollectiveCommType.Value("GATHER")
SCATTER = CollectiveCommType.Value("SCATTER")
BROADCAST = CollectiveCommType.Value("BROADCAST")
ALL_TO_ALL = CollectiveCommType.Value("ALL_TO_ALL")
REDUCE_SCATTER = CollectiveCommType.Value("REDUCE_SCATTER")
REDUCE_SCATTER_BLOCK = CollectiveCommType.Value("REDUCE_SCATTER_BLOCK")
BARRIER = CollectiveCommType.Value("BARRIER")
