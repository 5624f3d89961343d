"""Find the host and device traces of every rank of a job in one folder."""

from __future__ import annotations

from pathlib import Path

from chakra.errors import ChakraError
from chakra.link.batch import TRACE_SUFFIXES, rank_of
from chakra.pipeline.run import RankFiles


def ranks_in_folder(folder: Path) -> list[RankFiles]:
    """Host and device traces of every rank in one folder, by name: ``*host*``/``*kineto*``
    (ours), or ``chakra_host_et_<r>``/``kineto_<r>`` (the reference's)."""
    hosts = sorted(p for p in folder.iterdir() if "host" in p.name and p.name.endswith(
        TRACE_SUFFIXES))  # fmt: skip
    devices = sorted(p for p in folder.iterdir() if "kineto" in p.name and p.name.endswith(
        TRACE_SUFFIXES))  # fmt: skip
    by_rank = {rank_of(p): p for p in devices}
    ranks = []
    for host in hosts:
        rank = rank_of(host)
        if rank not in by_rank:
            raise ChakraError(f"{folder}: rank {rank} has {host.name} but no Kineto trace")
        ranks.append(RankFiles(rank, host, by_rank.pop(rank)))
    if by_rank:
        raise ChakraError(
            f"{folder}: ranks {sorted(by_rank)} have a Kineto trace but no host trace"
        )
    if not ranks:
        raise ChakraError(f"{folder}: no host/Kineto trace pairs found")
    return sorted(ranks, key=lambda r: r.rank)
