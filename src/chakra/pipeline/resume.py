"""Resuming an interrupted run: a rank whose outputs are complete and newer than its inputs
is reused instead of linked and converted again.

A rank is complete when ``rank<r>.et_plus.json``, ``rank<r>.et`` and ``rank<r>.report.json``
(its link and convert reports, written atomically after the other two) all exist, each is
newer than both input traces, and the report was made with the same link options.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Optional

import msgspec

from chakra.fileio import atomic_output
from chakra.link import LinkOptions

logger = logging.getLogger(__name__)


def rank_outputs(folder: Path, rank: int) -> tuple[Path, Path, Path]:
    """``(et_plus, et, report)`` paths of one rank in the output folder."""
    return (folder / f"rank{rank}.et_plus.json", folder / f"rank{rank}.et",
            folder / f"rank{rank}.report.json")  # fmt: skip


def write_rank_report(path: Path, entry: dict[str, Any], options: LinkOptions) -> None:
    """Store one rank's report entry with the options that made it (atomically)."""
    with atomic_output(path, text=True) as out:
        json.dump({"options": msgspec.to_builtins(options), "entry": entry}, out,
                  indent=2, sort_keys=True)  # fmt: skip


def reusable_entry(
    folder: Path, rank: int, inputs: tuple[Path, Path], options: LinkOptions
) -> Optional[dict[str, Any]]:
    """The stored report entry of ``rank`` if its outputs are complete, newer than both
    ``inputs`` (by modification time) and made with ``options``; else None."""
    outputs = rank_outputs(folder, rank)
    try:
        newest_input = max(path.stat().st_mtime_ns for path in inputs)
        if any(path.stat().st_mtime_ns <= newest_input for path in outputs):
            return None
        stored = json.loads(outputs[2].read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(stored, dict) or stored.get("options") != msgspec.to_builtins(options):
        return None
    entry = stored.get("entry")
    if not isinstance(entry, dict) or entry.get("rank") != rank:
        return None
    entry["et_plus"], entry["et"] = str(outputs[0]), str(outputs[1])
    return entry
