"""Host ET schema versions: parsing, the table of known versions, and their layouts."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import Optional

from chakra.ingest.host_model import SchemaVersion

_VERSION = re.compile(r"^\s*(\d+)\.(\d+)\.(\d+)(?:-chakra\.(\d+(?:\.\d+)*))?\s*$")


class Layout(enum.Enum):
    """How a schema lays out a node."""

    TOP_LEVEL = "1.0.1"  # rf_id, parent, inputs list, input_shapes... at the node's top level
    ATTRS = "1.0.2+"  # ctrl_deps, attrs list, inputs/outputs objects


#: Every schema string PyTorch and the Chakra tools are known to write, and its layout.
KNOWN_SCHEMAS: Mapping[str, Layout] = {
    "1.0.1": Layout.TOP_LEVEL,
    "1.0.2-chakra.0.0.4": Layout.ATTRS,
    "1.0.3-chakra.0.0.4": Layout.ATTRS,
    "1.0.4-chakra.0.0.4": Layout.ATTRS,
    "1.1.0-chakra.0.0.4": Layout.ATTRS,
    "1.1.1-chakra.0.0.4": Layout.ATTRS,
    "1.1.1-chakra.1.0.0": Layout.ATTRS,
}
NEWEST_KNOWN = "1.1.1-chakra.1.0.0"


def parse_version(schema: str) -> Optional[SchemaVersion]:
    """``"1.0.3-chakra.0.0.4"`` → ``SchemaVersion(1, 0, 3, (0, 0, 4))``; None if unparsable."""
    match = _VERSION.match(schema)
    if match is None:
        return None
    major, minor, patch, chakra = match.groups()
    suffix = tuple(int(part) for part in chakra.split(".")) if chakra else ()
    return SchemaVersion(int(major), int(minor), int(patch), suffix)


def layout_by_structure(has_attrs: bool, has_ctrl_deps: bool) -> Layout:
    """The layout a node with these keys follows (for schemas not in the table)."""
    return Layout.ATTRS if has_attrs or has_ctrl_deps else Layout.TOP_LEVEL
