"""Helpers shared by the synthetic-workload tests."""

from __future__ import annotations

import json
from pathlib import Path

from chakra.fileio.compressed import read_input


def load_json(path: Path) -> dict:
    """A generated file parsed with the standard library (gzip or not)."""
    return json.loads(read_input(path))
