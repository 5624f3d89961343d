"""The JSON shape of host ET files, as msgspec decodes it (every vintage in one schema).

Schema 1.0.1 keeps node fields at the top level (``parent``, ``rf_id``, ``inputs`` as a
list with ``input_shapes``/``input_types``); 1.0.2 and later use ``ctrl_deps``, an ``attrs``
list and ``inputs``/``outputs`` objects. The loader turns these raw records into
:mod:`chakra.ingest.host_model` values.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import msgspec


class RawAttr(msgspec.Struct, gc=False):
    name: str
    type: str = ""
    value: Any = None


class RawArgs(msgspec.Struct, gc=False):
    values: list = []
    shapes: list = []
    types: list = []
    strides: Optional[list] = None


class RawHostNode(msgspec.Struct, gc=False):
    id: int
    name: str
    ctrl_deps: Optional[int] = None
    parent: Optional[int] = None
    inputs: Union[RawArgs, list, None] = None
    outputs: Union[RawArgs, list, None] = None
    attrs: Optional[list[RawAttr]] = None
    # 1.0.1 layout
    input_shapes: Optional[list] = None
    input_types: Optional[list] = None
    output_shapes: Optional[list] = None
    output_types: Optional[list] = None
    rf_id: Optional[int] = None
    fw_parent: Optional[int] = None
    seq_id: Optional[int] = None
    scope: Optional[int] = None
    tid: Optional[int] = None
    fw_tid: Optional[int] = None
    op_schema: Optional[str] = None


class RawHostTrace(msgspec.Struct, gc=False):
    nodes: list[RawHostNode]
    schema: Optional[str] = None
    pid: Optional[int] = None
    time: Optional[str] = None
    start_ts: Optional[int] = None
    finish_ts: Optional[int] = None


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
PROCESS_GROUPS_DECODER = msgspec.json.Decoder(list[RawProcessGroup], strict=False)
