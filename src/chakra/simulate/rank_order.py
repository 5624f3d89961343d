"""Which rank each file of a job is: from its metadata (the converter writes ``rank`` into
a ``.et``'s GlobalMetadata) or from its name (``PREFIX.<r>.et``, ``PREFIX.<r>.et.gz``, the
pipeline's ``rank<r>.et_plus.json``), never from the order of the arguments: a shell glob
sorts ``job.10.et`` before ``job.2.et``.

:func:`rank_order` is the rule (pure but for its one warning); :func:`files_in_rank_order`
reads the ranks the files carry and applies it. Every entry point that takes one file per
rank goes through it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

import msgspec

from chakra.errors import ChakraError, PathLike, RankOrderError, read_every_input
from chakra.et import EtReader, get_int_attr
from chakra.ingest.detect import TraceKind, sniff_kind

logger = logging.getLogger(__name__)
#: The argument lists already warned about (the CLI orders its files, then the library
#: entry point it calls orders them again: one warning is enough).
_warned: set[tuple[str, ...]] = set()

#: The GlobalMetadata attribute that holds a ``.et`` file's global rank.
RANK_ATTR = "rank"

_NAMED = (
    re.compile(r"^.+\.(?P<rank>\d+)\.et(?:\.gz)?$"),  # PREFIX.<r>.et, PREFIX.<r>.et.gz
    re.compile(r"^rank(?P<rank>\d+)\.et_plus\.json(?:\.gz)?$"),  # the pipeline's ET+
)


class RankedFile(msgspec.Struct, frozen=True):
    """One file of a job and the ranks it carries: in its name and in its metadata (None:
    it carries none there)."""

    path: str
    name_rank: Optional[int] = None
    metadata_rank: Optional[int] = None

    @property
    def rank(self) -> Optional[int]:
        """The rank the file says it is: its metadata's, else its name's."""
        return self.metadata_rank if self.metadata_rank is not None else self.name_rank


def name_rank(path: PathLike) -> Optional[int]:
    """The rank a file's name gives (``PREFIX.<r>.et[.gz]``, ``rank<r>.et_plus.json``)."""
    name = Path(path).name
    for pattern in _NAMED:
        match = pattern.match(name)
        if match:
            return int(match["rank"])
    return None


def metadata_rank(path: PathLike) -> Optional[int]:
    """The ``rank`` a Chakra ET file's GlobalMetadata holds; None for other files (ET+
    carries its rank in its name) and for ``.et`` files without one."""
    if sniff_kind(path) is not TraceKind.CHAKRA_ET:
        return None
    with EtReader(path) as reader:
        try:
            rank = get_int_attr(reader.metadata, RANK_ATTR)
        except ChakraError as exc:
            raise RankOrderError(f"{path}: the GlobalMetadata's rank: {exc}") from None
    return rank if isinstance(rank, int) and rank >= 0 else None


def ranked_file(path: PathLike) -> RankedFile:
    """The ranks ``path`` carries, read from its name and its metadata."""
    return RankedFile(str(path), name_rank(path), metadata_rank(path))


def rank_order(files: Sequence[RankedFile]) -> list[RankedFile]:
    """``files`` sorted by rank. Raises :class:`~chakra.errors.RankOrderError` (one line)
    when a name and its file's metadata disagree, two files are one rank, the ranks are
    not 0 to N-1, or some files carry a rank and others do not. When none carries one,
    the files stay in the order given (a warning says so when there are several)."""
    for file in files:
        named, held = file.name_rank, file.metadata_rank
        if named is not None and held is not None and named != held:
            raise RankOrderError(
                f"{file.path}: its name says rank {named} but its metadata says rank {held}: "
                "renamed? name it after the rank it holds"
            )
    carrying = [file for file in files if file.rank is not None]
    if not carrying:
        given = tuple(file.path for file in files)
        if len(files) > 1 and given not in _warned:
            _warned.add(given)
            logger.warning(
                "no file names its rank (PREFIX.<rank>.et) or holds it in its metadata: "
                "ranks 0 to %d follow the order of the arguments",
                len(files) - 1,
            )
        return list(files)
    if len(carrying) < len(files):
        bare = next(file for file in files if file.rank is None)
        raise RankOrderError(
            f"{bare.path}: no rank in its name (PREFIX.<rank>.et) or metadata, while "
            f"{carrying[0].path} is rank {carrying[0].rank}: name every file after its rank"
        )
    ordered = sorted(files, key=lambda file: file.rank or 0)
    _require_zero_to_n(ordered)
    return ordered


def _require_zero_to_n(ordered: Sequence[RankedFile]) -> None:
    """Raise RankOrderError unless the sorted files are ranks 0 to N-1, once each (one file
    alone may be any rank: it is simulated on its own)."""
    for before, after in zip(ordered, ordered[1:]):
        if before.rank == after.rank:
            raise RankOrderError(f"{before.path} and {after.path} are both rank {after.rank}")
    if len(ordered) < 2:
        return
    ranks = [file.rank for file in ordered]
    missing = sorted(set(range(max(ranks) + 1)) - set(ranks))  # type: ignore[type-var]
    if missing:
        shown = ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")
        raise RankOrderError(
            f"{len(ordered)} files given, ranks {ranks[0]} to {ranks[-1]}: rank {shown} "
            f"missing (a job's files are ranks 0 to N-1, each once)"
        )


def files_in_rank_order(paths: Sequence[PathLike]) -> list[str]:
    """``paths`` in rank order, as :func:`rank_order` says (the ranks read from each
    file's name and metadata; every unreadable file is named, not only the first)."""
    return [file.path for file in rank_order(read_every_input(paths, ranked_file))]
