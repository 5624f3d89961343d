"""The record, in a ``.et``'s GlobalMetadata, of the dependencies the measured times
contradict and that the graph therefore lacks (``chakra_converter`` writes it, by kind;
``chakra_validate`` reports it, seeing only the ``.et``).

The attribute ``contradictions`` holds a JSON object of counts by kind as a ``string_val``
(``{"host_sync":2}``; ``{}``: none), an extra attribute the reference tools and ASTRA-sim
read past. A file without it says nothing either way (another producer).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Optional

from chakra.errors import EtFormatError, PathLike
from chakra.et.attributes import get_str_attr, set_attr

#: The GlobalMetadata attribute's name.
CONTRADICTIONS_ATTR = "contradictions"


def set_contradictions(metadata: Any, counts: Mapping[str, int]) -> None:
    """Record ``counts`` (kind -> dependencies left out) in ``metadata``, kinds sorted."""
    text = json.dumps({k: int(n) for k, n in sorted(counts.items()) if n}, separators=(",", ":"))
    set_attr(metadata, CONTRADICTIONS_ATTR, text, "string_val")


def get_contradictions(metadata: Any, path: PathLike) -> Optional[Mapping[str, int]]:
    """The counts recorded in ``metadata`` (of the file ``path``) by kind (kinds sorted),
    or None when it records none. A record that is not a JSON object of non-negative
    integers raises :class:`EtFormatError`."""
    text = get_str_attr(metadata, CONTRADICTIONS_ATTR)
    if text is None:
        return None
    try:
        counts = json.loads(text)
    except (ValueError, RecursionError):
        counts = None
    # type(n) is int: a bool is no count
    valid = isinstance(counts, dict) and all(type(n) is int and n >= 0 for n in counts.values())
    if not valid:
        raise EtFormatError(
            path,
            f"the GlobalMetadata's {CONTRADICTIONS_ATTR!r} attribute is not a JSON object of "
            f"counts: {text[:80]!r}",
        )
    return dict(sorted(counts.items()))
