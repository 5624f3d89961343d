"""Resuming an interrupted run: a rank whose outputs are complete and newer than its inputs
is reused instead of linked and converted again.

A rank is complete when ``rank<r>.et_plus.json``, ``PREFIX.<r>.et`` and ``rank<r>.report.json``
(its link and convert reports, written atomically after the other two) all exist, each is
newer than both input traces, and the report was made with the same options.

The folder may be a URL (see :mod:`chakra.fileio.location`). Where its file system does not
report modification times, a rank whose three outputs exist (and whose report has the same
options) counts as finished: the report is written last and appears whole, so a finished
report file is a finished rank.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Optional

import msgspec

from chakra.errors import ChakraError
from chakra.fileio import atomic_output, read_input
from chakra.fileio.location import Location, join, modified_ns

logger = logging.getLogger(__name__)


#: The default ``PREFIX`` of the ``.et`` files: ASTRA-sim loads ``PREFIX.<rank>.et``.
ET_PREFIX = "workload"


def rank_outputs(
    folder: Location, rank: int, et_prefix: str = ET_PREFIX
) -> tuple[Location, Location, Location]:
    """``(et_plus, et, report)`` locations of one rank in the output folder."""
    return (join(folder, f"rank{rank}.et_plus.json"), join(folder, f"{et_prefix}.{rank}.et"),
            join(folder, f"rank{rank}.report.json"))  # fmt: skip


def write_rank_report(path: Location, entry: dict[str, Any], options: Any) -> None:
    """Store one rank's report entry with the options that made it (atomically)."""
    with atomic_output(path, text=True) as out:
        json.dump({"options": msgspec.to_builtins(options), "entry": entry}, out,
                  indent=2, sort_keys=True)  # fmt: skip


def _outputs_newer(outputs: tuple[Location, ...], inputs: tuple[Location, ...]) -> bool:
    """Whether every output is newer than every input; True when a time is unknown (then
    the outputs existing is enough). A missing file raises ``OSError``."""
    input_times = [modified_ns(path) for path in inputs]
    output_times = [modified_ns(path) for path in outputs]
    known_inputs = [t for t in input_times if t is not None]
    known_outputs = [t for t in output_times if t is not None]
    if len(known_inputs) < len(inputs) or len(known_outputs) < len(outputs):
        return True
    return min(known_outputs) > max(known_inputs)


def reusable_entry(
    folder: Location,
    rank: int,
    inputs: tuple[Location, Location],
    options: Any,
    et_prefix: str = ET_PREFIX,
) -> Optional[dict[str, Any]]:
    """The stored report entry of ``rank`` if its outputs are complete, newer than both
    ``inputs`` (by modification time) and made with ``options`` (link and convert options,
    anything msgspec turns into JSON); else None."""
    outputs = rank_outputs(folder, rank, et_prefix)
    try:
        if not _outputs_newer(outputs, inputs):
            return None
        stored = json.loads(read_input(outputs[2]))
    except (OSError, ValueError, ChakraError):
        return None
    if not isinstance(stored, dict) or stored.get("options") != msgspec.to_builtins(options):
        return None
    entry = stored.get("entry")
    if not isinstance(entry, dict) or entry.get("rank") != rank:
        return None
    entry["et_plus"], entry["et"] = str(outputs[0]), str(outputs[1])
    return entry
