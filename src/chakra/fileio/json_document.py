"""The one loose container allowed across packages: a JSON document, decoded from a file or
bound for one. Its schema is the file format's (docs/formats.md), not a Python type: a
struct would only repeat it. Everything else crosses packages as a typed value."""

from __future__ import annotations

from typing import Any

#: A JSON object read from, or about to be written to, a file (a summary, a report, a
#: Chrome trace): JSON-ready values only.
JsonDocument = dict[str, Any]
