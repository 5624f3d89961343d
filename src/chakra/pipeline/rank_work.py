"""One rank's stages, as a worker runs them: link, convert, write the rank's report and
manifest, then read the ``.et`` just written (:mod:`chakra.ranks.rank_read`) so that the
parent, which simulates every rank together, need not read it again."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import msgspec

from chakra.convert import ConvertOptions, convert_file
from chakra.fileio.location import Location, name_of
from chakra.link import LinkOptions
from chakra.link.batch import RankPair, link_files
from chakra.pipeline.resume import ET_PREFIX, digest_inputs, rank_outputs, write_rank_report
from chakra.ranks.rank_read import RankRead, try_read_rank

#: One rank's host and device traces: local paths, or URL strings (the linker's pairing).
RankFiles = RankPair
#: How a rank's manifest names its host and device traces, or its device trace alone
#: (:mod:`chakra.pipeline.naming`).
Labels = tuple[str, ...]


class RankOptions(msgspec.Struct, frozen=True):
    """How every rank is linked and converted, and the prefix of its ``.et`` file."""

    link: LinkOptions = LinkOptions()
    convert: ConvertOptions = ConvertOptions()
    et_prefix: str = ET_PREFIX


class RankWork(msgspec.Struct, frozen=True):
    """A rank's link-and-convert entry for its report and, when its worker read the ``.et``
    it wrote (:mod:`chakra.ranks.rank_read`), that read (None: reused, or unreadable)."""

    entry: dict[str, Any]
    read: Optional[RankRead] = None


def link_and_convert(
    job: tuple[RankFiles, Location, RankOptions, Labels, int, bool],
) -> RankWork:
    """One rank's stages in a worker; ``job``'s last items: the rank's position in the job
    and whether the timeline shows it (the read then keeps the input shapes)."""
    files, folder, options, labels, position, shown = job
    et_plus, et, report = rank_outputs(folder, files.rank, options.et_prefix)
    inputs = digest_inputs(files.inputs, labels)  # before reading them
    link = link_files(files.host, files.device, et_plus, options.link)
    conversion = convert_file(
        et_plus, et, msgspec.structs.replace(options.convert, rank=files.rank)
    )
    entry = {
        "rank": files.rank, "et_plus": name_of(et_plus), "et": name_of(et),
        "link": msgspec.to_builtins(link), "convert": msgspec.to_builtins(conversion),
    }  # fmt: skip
    write_rank_report(report, entry, options, inputs, (et_plus, et))
    # read here, beside the other ranks' linking, rather than by the parent after them all
    return RankWork(entry, try_read_rank(et, position, shown) if isinstance(et, Path) else None)
