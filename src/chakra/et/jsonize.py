"""Render a Chakra ET file as JSON: one valid document, or one message per line (JSON Lines).

Messages use protobuf's canonical JSON mapping: lowerCamelCase field names (``dataDeps``,
``durationMicros``, ``int64Val``), 64-bit integers as strings, enum values by name, and
fields at their default value omitted. The document form is::

    {"globalMetadata": {...},
     "nodes": [
    {...},
    ...
    ]}

with one node per line; the JSON Lines form has the GlobalMetadata on line 1 and one node per
following line. Output streams node by node and appears atomically.
"""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import json_format

from chakra.errors import PathLike
from chakra.et.reader import EtReader
from chakra.fileio import atomic_output


def message_to_json(message: Any) -> str:
    """One message as compact single-line JSON in protobuf's canonical mapping."""
    return json.dumps(json_format.MessageToDict(message), ensure_ascii=False)


def jsonize_et(input_path: PathLike, output_path: PathLike, *, jsonl: bool = False) -> int:
    """Write the JSON rendering of ``input_path`` to ``output_path``; return the node count."""
    with EtReader(input_path) as reader, atomic_output(output_path, text=True) as out:
        metadata = message_to_json(reader.metadata)
        if jsonl:
            out.write(metadata + "\n")
            for node in reader:
                out.write(message_to_json(node) + "\n")
        else:
            out.write(f'{{"globalMetadata": {metadata},\n "nodes": [')
            separator = "\n"
            for node in reader:
                out.write(separator + message_to_json(node))
                separator = ",\n"
            out.write("\n]}\n")
        return reader.nodes_read
