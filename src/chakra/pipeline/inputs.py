"""Find the host and device traces of every rank of a job: in one folder, or in a folder of
host traces and a folder of device traces. Folders may be URLs (``s3://bucket/job/``)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from chakra.errors import ChakraError
from chakra.fileio.location import Location, list_folder, name_of
from chakra.link.batch import TRACE_SUFFIXES, pair_by_rank, rank_of
from chakra.pipeline.run import RankFiles


def _rank(path: Location) -> Optional[int]:
    return rank_of(Path(name_of(path)))


def ranks_in_folder(folder: Location) -> list[RankFiles]:
    """Host and device traces of every rank in one folder, by name: ``*host*``/``*kineto*``
    (ours), or ``chakra_host_et_<r>``/``kineto_<r>`` (the reference's)."""
    listed = [(name_of(p), p) for p in list_folder(folder)]
    hosts = [p for name, p in listed if "host" in name and name.endswith(TRACE_SUFFIXES)]
    devices = [p for name, p in listed if "kineto" in name and name.endswith(TRACE_SUFFIXES)]
    by_rank = {_rank(p): p for p in devices}
    ranks = []
    for host in hosts:
        rank = _rank(host)
        if rank not in by_rank:
            raise ChakraError(f"{folder}: rank {rank} has {name_of(host)} but no Kineto trace")
        ranks.append(RankFiles(rank, host, by_rank.pop(rank)))  # type: ignore[arg-type]
    if by_rank:
        raise ChakraError(
            f"{folder}: ranks {sorted(by_rank)} have a Kineto trace but no host trace"  # type: ignore[type-var]
        )
    if not ranks:
        raise ChakraError(f"{folder}: no host/Kineto trace pairs found")
    return sorted(ranks, key=lambda r: r.rank)


def ranks_in_folders(host_dir: Location, device_dir: Location) -> list[RankFiles]:
    """Every rank present in both a folder of host traces and one of Kineto traces, paired
    by the last number in their names."""
    return [RankFiles(*pair) for pair in pair_by_rank(host_dir, device_dir)]
