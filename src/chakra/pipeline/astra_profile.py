"""Which ``.et`` family a pipeline run hands to ASTRA-sim: the full graphs
(``PREFIX.<r>.et``, what ``chakra_sim`` replays), or with ``--astra-sim-profile fold`` their
fold (``PREFIX_fold.<r>.et``: :mod:`chakra.simulate.fold`), which ASTRA-sim's resource model
replays at the measured step, with the ring bandwidth at which it does
(:mod:`chakra.simulate.astra_calibration`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import msgspec

from chakra.errors import ChakraError
from chakra.et.reader import EtReader
from chakra.et.writer import write_et
from chakra.fileio import AtomicGroup
from chakra.fileio.location import Location, join
from chakra.pipeline.option_values import PROFILES
from chakra.simulate.astra_calibration import fitted_ring
from chakra.simulate.fold import fold_job, fold_metadata
from chakra.simulate.sim_result import SimResult

logger = logging.getLogger(__name__)


class AstraSimFamily(msgspec.Struct, frozen=True):
    """The family handed to ASTRA-sim: its ``prefix``, the ``profile``, and, for the fold,
    the ring bandwidth (GB/s) and per-hop latency (ns) that reproduce the measured
    collectives (None when the job has none to fit on)."""

    prefix: Location
    profile: str = "full"
    gbps: Optional[float] = None
    latency_ns: Optional[float] = None
    ratios: tuple[float, ...] = ()  # each rank's ASTRA-sim finish over its measured step


def _read(path: Path) -> tuple[Any, list[Any]]:
    with EtReader(path) as reader:
        return reader.metadata, list(reader)


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
    read = [_read(path) for path in ets]
    folded = fold_job([rank_nodes for _, rank_nodes in read], replay)
    measured = [r.measured_makespan_us or r.simulated_makespan_us for r in replay.ranks]
    fit = fitted_ring(folded, measured)
    gbps = fit.ring.bandwidth_gbps
    prefix = join(output_dir, fold_name(et_prefix))
    for rank, ((metadata, _), nodes) in enumerate(zip(read, folded)):
        write_et(f"{prefix}.{rank}.et", fold_metadata(metadata, gbps), nodes, group)
    shown = ", ".join(f"{ratio:.3f}" for ratio in fit.ratios)
    if fit.matched:
        logger.info("ASTRA-sim fold: with a ring of %.4g GB/s each rank finishes at %s of its "
                    "measured step", gbps, shown)  # fmt: skip
    else:
        logger.warning("ASTRA-sim fold: no ring bandwidth makes the ranks finish at their "
                       "measured step; at %.4g GB/s: %s of it", gbps, shown)  # fmt: skip
    return AstraSimFamily(prefix, "fold", gbps, fit.ring.latency_ns, fit.ratios)
