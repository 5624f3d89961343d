"""Which ``.et`` family a pipeline run hands to ASTRA-sim: the full graphs
(``PREFIX.<r>.et``, what ``chakra_sim`` replays), or with ``--astra-sim-profile fold`` their
fold (``PREFIX_fold.<r>.et``: :mod:`chakra.simulate.fold`), which ASTRA-sim's resource model
replays at the measured step, with the ring bandwidth that reproduces the measured
collectives (:mod:`chakra.simulate.astra_calibration`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

import msgspec

from chakra.errors import ChakraError
from chakra.et import read_et
from chakra.et.writer import write_et
from chakra.fileio import AtomicGroup
from chakra.fileio.location import Location, join
from chakra.simulate.astra_calibration import fitted_ring
from chakra.simulate.fold import fold_job, fold_metadata
from chakra.simulate.sim_result import SimResult

logger = logging.getLogger(__name__)
#: The profiles: the full graphs, or their fold.
PROFILES = ("full", "fold")


class AstraSimFamily(msgspec.Struct, frozen=True):
    """The family handed to ASTRA-sim: its ``prefix``, the ``profile``, and, for the fold,
    the ring bandwidth (GB/s) and per-hop latency (ns) that reproduce the measured
    collectives (None when the job has none to fit on)."""

    prefix: Location
    profile: str = "full"
    gbps: Optional[float] = None
    latency_ns: Optional[float] = None


def fold_name(et_prefix: str) -> str:
    """The prefix of the fold family (``workload_fold``: not matched by ``workload.*.et``)."""
    return f"{et_prefix}_fold"


def write_profile(
    profile: str,
    ets: Sequence[Location],
    replay: SimResult,
    output_dir: Location,
    et_prefix: str,
    group: AtomicGroup,
) -> AstraSimFamily:
    """Write the fold of the job's graphs ``ets`` (as ``replay`` ran them) into ``group``
    when ``profile`` is ``fold``; the family ASTRA-sim is to run, either way."""
    if profile not in PROFILES:
        raise ChakraError(f"--astra-sim-profile {profile!r}: expected one of {', '.join(PROFILES)}")
    if profile == "full":
        return AstraSimFamily(join(output_dir, et_prefix))
    if not all(isinstance(path, Path) for path in ets):
        raise ChakraError("--astra-sim-profile fold needs a local output folder")
    read = [read_et(path) for path in ets]
    nodes = [rank_nodes for _, rank_nodes in read]
    fit = fitted_ring(nodes, replay)
    gbps = None if fit is None else fit.ring.bandwidth_gbps
    prefix = join(output_dir, fold_name(et_prefix))
    for rank, ((metadata, _), folded) in enumerate(zip(read, fold_job(nodes, replay))):
        write_et(f"{prefix}.{rank}.et", fold_metadata(metadata, gbps), folded, group)
    if fit is not None:
        logger.info(
            "ASTRA-sim fold: a ring of %.1f GB/s, %.0f ns per hop reproduces the %d measured "
            "collectives (median |error| %.1f%%)",
            gbps, fit.ring.latency_ns, fit.collectives, fit.median_error_pct,
        )  # fmt: skip
    latency = None if fit is None else fit.ring.latency_ns
    return AstraSimFamily(prefix, "fold", gbps, latency)
