"""The JSON shape of host ET files, as msgspec decodes it (every vintage in one schema).

Schema 1.0.1 keeps node fields at the top level (``parent``, ``rf_id``, ``inputs`` as a
list with ``input_shapes``/``input_types``); 1.0.2 and later use ``ctrl_deps``, an ``attrs``
list and ``inputs``/``outputs`` objects. The loader turns these raw records into
:mod:`chakra.ingest.host_model` values.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional, Union

import msgspec

#: An integer an ``.et`` field and the simulator's int64 arrays hold (ids, times, pids).
Int63 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class RawAttr(msgspec.Struct, gc=False):
    name: str
    type: str = ""
    value: Any = None


EMPTY_JSON_LIST = msgspec.Raw(b"[]")
#: Default of raw fields: msgspec cannot decode ``Optional[Raw]``, so absence reads as null.
NULL_JSON = msgspec.Raw(b"null")


def is_null(raw: msgspec.Raw) -> bool:
    return bytes(memoryview(raw)[:4]) == b"null"


class RawArgs(msgspec.Struct, gc=False):
    """An ``inputs``/``outputs`` object (1.0.2+), its lists kept as raw JSON."""

    values: msgspec.Raw = EMPTY_JSON_LIST
    shapes: msgspec.Raw = EMPTY_JSON_LIST
    types: msgspec.Raw = EMPTY_JSON_LIST
    strides: msgspec.Raw = NULL_JSON


class RawHostNode(msgspec.Struct, gc=False):
    id: Int63
    name: str
    ctrl_deps: Optional[Int63] = None
    parent: Optional[Int63] = None
    # an object (1.0.2+) or a list (1.0.1), kept raw: decoded when and if needed
    inputs: msgspec.Raw = NULL_JSON
    outputs: msgspec.Raw = NULL_JSON
    attrs: Optional[list[RawAttr]] = None
    # 1.0.1 layout
    input_shapes: msgspec.Raw = NULL_JSON
    input_types: msgspec.Raw = NULL_JSON
    output_shapes: msgspec.Raw = NULL_JSON
    output_types: msgspec.Raw = NULL_JSON
    rf_id: Optional[Int63] = None
    fw_parent: Optional[Int63] = None
    seq_id: Optional[Int63] = None
    scope: Optional[Int63] = None
    tid: Optional[Int63] = None
    fw_tid: Optional[Int63] = None
    op_schema: Optional[str] = None


class RawHostTrace(msgspec.Struct, gc=False):
    """The document, its nodes left as raw JSON: the loader decodes them one at a time, so
    that no list of every node's intermediate record is ever held at once."""

    nodes: list[msgspec.Raw]
    schema: Optional[str] = None
    pid: Optional[Int63] = None
    time: Optional[str] = None
    start_ts: Optional[Int63] = None
    finish_ts: Optional[Int63] = None


class RawProcessGroup(msgspec.Struct, gc=False):
    """One entry of the JSON list inside ``## process_group:init ##``."""

    pg_name: Union[str, int]
    pg_desc: Optional[str] = None
    backend_config: Optional[str] = None
    backend_id: Optional[int] = None
    ranks: list[int] = []
    group_size: Optional[int] = None
    group_count: Optional[int] = None


HOST_TRACE_DECODER = msgspec.json.Decoder(RawHostTrace, strict=False)
HOST_NODE_DECODER = msgspec.json.Decoder(RawHostNode, strict=False)
ARGS_DECODER = msgspec.json.Decoder(RawArgs)
PROCESS_GROUPS_DECODER = msgspec.json.Decoder(list[RawProcessGroup], strict=False)
