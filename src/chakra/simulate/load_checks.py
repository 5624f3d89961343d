"""What loading a graph checks, and what it does about the problems it finds.

A graph read from a file goes through the checks ``chakra_validate --no-astra-sim`` makes
(:data:`SIM_CHECKS`: :func:`chakra.et.graph_checks.node_problems` and
:mod:`chakra.et.dep_checks`, the same code), made while the graph is read. A graph with
problems is refused: one line with the first problem and a count per kind. With
:attr:`LoadOptions.lenient` it is simulated anyway, with one warning that counts each kind
and says what the replay does about it; a repeated id, or an id of 2^63 or more, is refused
even then (the replay indexes nodes by id). ASTRA-sim's own limits (METADATA nodes, group
names, unsupported collectives) are ``chakra_validate``'s business, not the replay's.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Optional

import msgspec

from chakra.errors import SimulationError
from chakra.et.graph_checks import (
    ID_OUT_OF_RANGE,
    PROBLEM_KINDS,
    ValidationOptions,
    ValidationReport,
)

logger = logging.getLogger(__name__)

#: What ``chakra_sim`` checks: ``chakra_validate --no-astra-sim``'s checks.
SIM_CHECKS = ValidationOptions(astra_sim=False)

#: What a lenient load does about each kind of problem, as its warning says it.
REMEDIES: Mapping[str, str] = {
    "dangling_data_dep": "ignored {n} data deps on ids no node has",
    "dangling_ctrl_dep": "ignored {n} ctrl deps on ids no node has",
    "self_dep": "ignored {n} self-dependencies",
    "cycle": "kept {n} dependency cycles (the replay waits on data_deps only: a node on a"
    " data_deps cycle never runs)",
    "invalid_type": "replayed {n} nodes of an invalid type as plain nodes",
    "missing_attr": "assumed defaults for {n} missing attributes",
    "wrong_attr_kind": "read {n} attributes of the wrong kind for the integer they hold, or"
    " ignored them",
    "invalid_attr_value": "kept {n} negative comm_size values",
    "invalid_comm_type": "kept {n} comm_type values that name no collective",
    "out_of_range": "ignored {n} out-of-range durations (0 us where the replay needs one)",
    "missing_stream": "replayed {n} GPU nodes without a stream on stream 0",
    "invalid_pg_name": "kept {n} pg_name values ASTRA-sim cannot read",
    "astra_sim_unsupported": "kept {n} nodes ASTRA-sim cannot run",
    "unknown_group": "kept {n} pg_name values the comm-group file does not list",
}
#: What a lenient load for ASTRA-sim's model does differently: it waits on ctrl_deps too.
ASTRA_REMEDIES: Mapping[str, str] = {
    **REMEDIES,
    "cycle": "kept {n} dependency cycles (ASTRA-sim's model waits on data_deps and ctrl_deps:"
    " a node on a cycle never runs)",
}
#: Kinds no load goes on with: the replay indexes nodes by their ids.
FATAL = frozenset({"duplicate_id"})


class LoadOptions(msgspec.Struct, frozen=True):
    """How a file becomes a graph. ``serialize_gpu``: all GPU nodes of a device on one slot
    (see :func:`chakra.simulate.graph_build.build_graph`). ``checks``: what the load
    checks (None: nothing, for a file this process has just written and checked; the
    replay then refuses only what it cannot index). ``lenient``: a graph with problems is
    simulated anyway, with one warning (logged) that counts each kind and says what the
    replay does about it, instead of refused. ``cache``: a file loaded before with the same
    options is taken from the graph cache, and a file loaded anew is stored there
    (:mod:`chakra.simulate.graph_cache`). Off by default: a library call or the pipeline
    (whose ``.et`` files are new each run) writes nothing to the user's cache folder;
    ``chakra_sim``, which users rerun on the same files, turns it on (``--no-cache``
    leaves it off)."""

    serialize_gpu: bool = False
    lenient: bool = False
    checks: Optional[ValidationOptions] = SIM_CHECKS
    cache: bool = False


def judge(
    report: ValidationReport,
    rank: int,
    lenient: bool,
    source: str = "",
    remedies: Mapping[str, str] = REMEDIES,
) -> None:
    """Nothing for a graph without problems. Otherwise raises SimulationError (one line:
    the rank, a count per kind and the first problem), or with ``lenient`` logs one warning
    (naming ``source`` too, when given; ``remedies`` says what the load does about each
    kind) unless a problem is one no load goes on with."""
    if report.ok:
        return
    counts = report.counts()
    shown = ", ".join(f"{counts[kind]:,} {kind}" for kind in PROBLEM_KINDS if kind in counts)
    fatal = [p for p in report.problems if p.kind in FATAL or ID_OUT_OF_RANGE in p.message]
    first = (fatal or report.problems)[0].message
    if not lenient or fatal:
        advice = ("it cannot be simulated even with --lenient" if fatal
                  else "chakra_validate lists them all; --lenient simulates it anyway")  # fmt: skip
        raise SimulationError(
            f"rank {rank}: the graph fails chakra_validate's checks ({shown}); first: {first};"
            f" {advice}"
        )
    done = "; ".join(
        remedies[kind].format(n=f"{counts[kind]:,}") for kind in PROBLEM_KINDS if kind in counts
    )
    where = f"{source}: rank {rank}" if source else f"rank {rank}"
    logger.warning(
        "%s: simulating a graph that fails chakra_validate's checks (--lenient): %s;"
        " first: %s", where, done, first,
    )  # fmt: skip
