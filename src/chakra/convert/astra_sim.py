"""The files a converted job needs to run in ASTRA-sim: group ids, the comm-group JSON, the
``PREFIX.<rank>.et`` naming and the command line. What ASTRA-sim requires of each node is in
:mod:`chakra.et.astra_sim`.

ASTRA-sim's communicator group ids must be above 0, PyTorch numbers its groups from 0 (the
default group): a group's ``pg_name`` is PyTorch's number + 1; a name that is not a number
(a hashed or user-given group name) gets an id from a checksum of the name, the same in
every rank's file. The PyTorch name stays in ``pg_name_original``. Groups reach ASTRA-sim
through ``--comm-group-configuration``, a JSON ``{"<pg_name>": [ranks]}`` written beside the
``.et`` files (:func:`comm_groups_path`; written by :mod:`chakra.convert.group_file`).
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import Optional

from chakra.fileio.location import Location

_RANK_FILE = re.compile(r"^(?P<prefix>.*)\.(?P<rank>\d+)\.et(\.gz)?$")

_NAMED_BASE = 1_000_000  # ids of groups named by text: above any PyTorch group number


class GroupIds:
    """ASTRA-sim's group id for each PyTorch group name (module doc): a number ``n``
    becomes ``n + 1``; any other name ``1,000,000 + crc32(name) % 1,000,000`` (the next
    free id on a clash), listed in :attr:`renamed` for the report."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}
        self.renamed: dict[str, str] = {}  # names that were not numbers -> their id
        self._taken: set[str] = set()

    def of(self, name: str) -> str:
        found = self.ids.get(name)
        if found is not None:
            return found
        if name.isascii() and name.isdigit() and int(name) < _NAMED_BASE:
            found = str(int(name) + 1)
        else:
            number = _NAMED_BASE + zlib.crc32(name.encode()) % _NAMED_BASE
            while str(number) in self._taken:
                number += 1
            found = self.renamed[name] = str(number)
        self._taken.add(found)
        self.ids[name] = found
        return found


def prefix_of(et_path: Path) -> Path:
    """The ASTRA-sim workload prefix of a ``PREFIX.<rank>.et`` file (else the path less
    ``.et``/``.et.gz``)."""
    match = _RANK_FILE.match(str(et_path))
    if match:
        return Path(match.group("prefix"))
    name = str(et_path)
    for suffix in (".et.gz", ".et"):
        if name.endswith(suffix):
            return Path(name[: -len(suffix)])
    return Path(name)


def comm_groups_path(et_path: Path) -> Path:
    """Where the comm-group JSON of a ``.et`` file (or family) goes: ``PREFIX.comm_groups.json``."""
    prefix = prefix_of(et_path)
    return prefix.with_name(prefix.name + ".comm_groups.json")


def command_line(prefix: Location, groups: Optional[Location]) -> str:
    """The ASTRA-sim (analytical backend) command that runs a ``PREFIX.<r>.et`` family; the
    system, network and memory configurations are the user's (upper-case placeholders)."""
    line = f"AstraSim_Analytical_Congestion_Unaware --workload-configuration={prefix}"
    if groups is not None:
        line += f" --comm-group-configuration={groups}"
    return (
        line + " --system-configuration=SYSTEM.json --network-configuration=NETWORK.yml"
        " --remote-memory-configuration=MEMORY.json"
    )
