"""The schema: checked-in descriptor matches et_def.proto, and matches the reference (§2.1-2.2)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys

import pytest
from google.protobuf import descriptor_pb2

from chakra.et import CollectiveCommType, Node, NodeType
from chakra.et.et_def_descriptor import PROTO_SHA256, SERIALIZED_FILE_DESCRIPTOR
from chakra.et.schema import FILE_DESCRIPTOR
from tests.conftest import REPO_ROOT

PROTO = REPO_ROOT / "schema" / "protobuf" / "et_def.proto"
IN_RUNTIME_MATRIX = os.environ.get("CHAKRA_PROTOBUF_MATRIX_RUN") == "1"

# Transcribed by hand from the reference description, §2.1: (field, number, protobuf type).
T = descriptor_pb2.FieldDescriptorProto
ATTRIBUTE_ONEOF = [
    ("double", T.TYPE_DOUBLE),
    ("float", T.TYPE_FLOAT),
    ("int32", T.TYPE_INT32),
    ("int64", T.TYPE_INT64),
    ("uint32", T.TYPE_UINT32),
    ("uint64", T.TYPE_UINT64),
    ("sint32", T.TYPE_SINT32),
    ("sint64", T.TYPE_SINT64),
    ("fixed32", T.TYPE_FIXED32),
    ("fixed64", T.TYPE_FIXED64),
    ("sfixed32", T.TYPE_SFIXED32),
    ("sfixed64", T.TYPE_SFIXED64),
    ("bool", T.TYPE_BOOL),
    ("string", T.TYPE_STRING),
    ("bytes", T.TYPE_BYTES),
]
NODE_FIELDS = [
    ("id", 1, T.TYPE_UINT64),
    ("name", 2, T.TYPE_STRING),
    ("type", 3, T.TYPE_ENUM),
    ("ctrl_deps", 4, T.TYPE_UINT64),
    ("data_deps", 5, T.TYPE_UINT64),
    ("start_time_micros", 6, T.TYPE_UINT64),
    ("duration_micros", 7, T.TYPE_UINT64),
    ("inputs", 8, T.TYPE_MESSAGE),
    ("outputs", 9, T.TYPE_MESSAGE),
    ("attr", 10, T.TYPE_MESSAGE),
]


def fields_of(message_name: str) -> list[tuple[str, int, int]]:
    message = FILE_DESCRIPTOR.message_types_by_name[message_name]
    return [(f.name, f.number, f.type) for f in message.fields]


def test_proto_source_hash_matches_the_artefact() -> None:
    assert hashlib.sha256(PROTO.read_bytes()).hexdigest() == PROTO_SHA256


@pytest.mark.skipif(IN_RUNTIME_MATRIX, reason="protoc (grpcio-tools) is only in the main env")
def test_artefact_is_what_protoc_compiles_from_the_proto() -> None:
    spec = importlib.util.spec_from_file_location(
        "regenerate", REPO_ROOT / "schema" / "protobuf" / "regenerate.py"
    )
    assert spec and spec.loader
    regenerate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(regenerate)
    compiled = descriptor_pb2.FileDescriptorProto.FromString(regenerate.compile_descriptor())
    shipped = descriptor_pb2.FileDescriptorProto.FromString(SERIALIZED_FILE_DESCRIPTOR)
    assert compiled == shipped
    artefact = REPO_ROOT / "src" / "chakra" / "et" / "et_def_descriptor.py"
    assert artefact.read_text() == regenerate.expected_artefact()


def test_node_fields_match_the_reference() -> None:
    assert FILE_DESCRIPTOR.package == "ChakraProtoMsg"
    assert fields_of("Node") == NODE_FIELDS
    shipped = descriptor_pb2.FileDescriptorProto.FromString(SERIALIZED_FILE_DESCRIPTOR)
    (node,) = [m for m in shipped.message_type if m.name == "Node"]
    repeated = {f.name for f in node.field if f.label == T.LABEL_REPEATED}
    assert repeated == {"ctrl_deps", "data_deps", "attr"}


def test_attribute_proto_fields_match_the_reference() -> None:
    expected = [("name", 1, T.TYPE_STRING), ("doc_string", 2, T.TYPE_STRING)]
    for index, (kind, scalar_type) in enumerate(ATTRIBUTE_ONEOF):
        expected.append((f"{kind}_val", 3 + 2 * index, scalar_type))
        expected.append((f"{kind}_list", 4 + 2 * index, T.TYPE_MESSAGE))
    assert fields_of("AttributeProto") == expected
    oneof = FILE_DESCRIPTOR.message_types_by_name["AttributeProto"].oneofs_by_name["value"]
    assert len(oneof.fields) == 30
    for kind, scalar_type in ATTRIBUTE_ONEOF:
        list_name = f"{kind[0].upper()}{kind[1:]}List"
        assert fields_of(list_name) == [("values", 1, scalar_type)]


def test_small_messages_match_the_reference() -> None:
    assert fields_of("GlobalMetadata") == [
        ("version", 1, T.TYPE_STRING),
        ("attr", 2, T.TYPE_MESSAGE),
    ]
    assert fields_of("IOInfo") == [
        ("values", 1, T.TYPE_STRING),
        ("shapes", 2, T.TYPE_STRING),
        ("types", 3, T.TYPE_STRING),
    ]
    assert [f[:2] for f in fields_of("Tensor")] == [
        ("tensor_id", 1),
        ("storage_id", 2),
        ("offset", 3),
        ("num_elem", 4),
        ("elem_bytes", 5),
        ("device", 6),
    ]


def test_enums_match_the_reference_and_the_python_enums() -> None:
    for enum_class in (NodeType, CollectiveCommType):
        values = FILE_DESCRIPTOR.enum_types_by_name[enum_class.__name__].values
        assert [(v.name, v.number) for v in values] == [(m.name, m.value) for m in enum_class]
    assert [(m.name, m.value) for m in NodeType][-1] == ("COMM_COLL_NODE", 7)
    assert CollectiveCommType.BARRIER == 9
    assert CollectiveCommType.ALL_TO_ALL == 6


def test_import_raises_no_warning() -> None:
    """Generated _pb2 modules warn or fail when runtime and gencode versions differ; ours must
    not warn at all."""
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", "import chakra.et; chakra.et.Node(id=1)"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_our_classes_do_not_touch_protobufs_default_pool() -> None:
    from google.protobuf import descriptor_pool

    with pytest.raises(KeyError):
        descriptor_pool.Default().FindFileByName("et_def.proto")
    assert Node.DESCRIPTOR.full_name == "ChakraProtoMsg.Node"
