"""ASTRA-sim's communicator-group file, ``PREFIX.comm_groups.json`` (``{"<pg_name>": [ranks]}``),
as ``chakra_converter`` keeps it when the ranks of one job are converted one at a time.

Each rank's run adds the groups its trace names to the file the earlier runs left. Before
anything is written, the file already there is read (:func:`read_comm_groups`: a file that is
not a group table is refused) and checked against this rank's groups
(:func:`merged_comm_groups`). The rule, in one sentence: **a group id that both name must
have the same members.** A group's members are a fact of the job, which every rank's trace
records whole (``pg_ranks``): two ranks of one job never disagree about them, so a file that
does was written for another job (or an earlier run of a different size) under the same
prefix, and merging it would silently widen or mix the groups. Such a file is refused with
one line naming the group and both member lists; nothing is written.

What the rule cannot see: a stale file whose every group id is absent from this rank's trace
(or names exactly the same members) is indistinguishable from one written by another rank of
this job, so its groups are kept. Converting every rank into a fresh prefix (or using
``chakra_pipeline``, which writes the file from all ranks at once) avoids the question.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Optional

from chakra.errors import ChakraError
from chakra.fileio import AtomicGroup, atomic_output
from chakra.fileio.location import Location
from chakra.fileio.regular import open_regular_text

#: A group table: ASTRA-sim group id -> the global ranks of its members, sorted.
GroupTable = Mapping[str, Sequence[int]]

_FORM = '{"<pg_name>": [ranks]}'


def read_comm_groups(path: Path) -> Optional[GroupTable]:
    """The group table in the file at ``path``; None when there is none. A file there that
    is not a group table (not JSON, not ``{"<pg_name>": [ranks]}``) raises a one-line
    ``ChakraError``."""
    if not path.exists():
        return None
    try:
        with open_regular_text(path) as stream:
            found = json.loads(stream.read())
    except (OSError, ValueError) as exc:
        raise ChakraError(f"{path}: not a comm-group JSON file ({exc})") from exc
    except RecursionError:
        raise ChakraError(f"{path}: not a comm-group JSON file (nested too deep)") from None
    if not isinstance(found, dict) or not all(
        isinstance(ranks, list) and all(type(r) is int for r in ranks) for ranks in found.values()
    ):
        raise ChakraError(f"{path}: not a comm-group JSON file ({_FORM})")
    return {str(name): sorted(set(ranks)) for name, ranks in found.items()}


def merged_comm_groups(
    path: Path, existing: Optional[GroupTable], groups: GroupTable, source: str
) -> GroupTable:
    """``existing`` (the table read from ``path`` before any write, or None) with this rank's
    ``groups`` (from the trace ``source``) added. A group id in both with other members
    means the file belongs to another job (module doc): a one-line ``ChakraError``."""
    table = {name: list(ranks) for name, ranks in (existing or {}).items()}
    for name, ranks in groups.items():
        members = sorted(set(ranks))
        earlier = table.get(name)
        if earlier is not None and list(earlier) != members:
            raise ChakraError(
                f"{path}: group {name} lists ranks {_ranks(earlier)} but {source} names its "
                f"members {_ranks(members)}: the file was written for another job (remove it, "
                "or convert into another output prefix); nothing written"
            )
        table[name] = members
    return table


def _ranks(ranks: Sequence[int]) -> str:
    """A member list for an error line: at most 8 ranks, then how many more."""
    shown = ", ".join(str(r) for r in ranks[:8])
    more = f", ... {len(ranks) - 8} more" if len(ranks) > 8 else ""
    return f"[{shown}{more}]"


def write_comm_groups(
    path: Location, groups: GroupTable, group: Optional[AtomicGroup] = None
) -> None:
    """Write ``{"<pg_name>": [ranks]}`` (ids ascending, ranks sorted), atomically; with a
    ``group``, it appears when the group commits (with the ``.et`` it belongs to)."""
    order = sorted(groups, key=lambda name: (not name.isdigit(), len(name), name))
    table = {name: sorted(set(groups[name])) for name in order}
    lines = [f" {json.dumps(name)}: {json.dumps(ranks)}" for name, ranks in table.items()]
    with atomic_output(path, text=True, group=group) as out:
        out.write("{\n" + ",\n".join(lines) + "\n}\n")


def add_comm_groups(path: Path, groups: GroupTable, source: str = "this trace") -> GroupTable:
    """Read the table at ``path`` (if any), add ``groups`` (checked as
    :func:`merged_comm_groups` says) and write the result; returns what was written. For one
    file on its own: ``chakra_converter`` writes it together with its ``.et``."""
    table = merged_comm_groups(path, read_comm_groups(path), groups, source)
    write_comm_groups(path, table)
    return table
