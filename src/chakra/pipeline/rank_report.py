"""What the pipeline reports per rank: :class:`RankReport`, built once after the
simulation from the rank's link and convert entry, and written to ``report.json`` (as
``msgspec.to_builtins`` makes it) at the writing edge."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from chakra.simulate.sim_result import PathEntry, RankResult, SimResult
from chakra.views import RankViews, rank_views


class RankReport(msgspec.Struct, frozen=True):
    """One rank of a pipeline run. ``et_plus`` and ``et``: where its linked trace and graph
    are (a path or URL, as text). ``link`` and ``convert``: the linker's and converter's
    summaries as their reports store them (JSON values: the resumable per-rank report
    holds them as read back from disk). ``simulation``, ``critical_path`` (largest
    first) and ``views``: the rank in the joint replay."""

    rank: int
    et_plus: str
    et: str
    link: dict[str, Any]
    convert: dict[str, Any]
    simulation: RankResult
    critical_path: tuple[PathEntry, ...]
    views: RankViews


def rank_reports(entries: Sequence[dict[str, Any]], result: SimResult) -> list[RankReport]:
    """The :class:`RankReport` of each link-and-convert entry (``rank``, ``et_plus``,
    ``et``, ``link``, ``convert``; sorted by rank, as ``result``'s graphs are) and the
    replay ``result`` (from :func:`chakra.simulate.simulate`, with its summaries)."""
    views = rank_views(result)
    return [
        RankReport(
            entry["rank"],
            entry["et_plus"],
            entry["et"],
            entry["link"],
            entry["convert"],
            simulation,
            path,
            view,
        )
        for entry, simulation, path, view in zip(
            entries, result.ranks, result.critical_paths, views
        )
    ]
