"""Find the host and device traces of every rank of a job: in one folder, or in a folder of
host traces and a folder of device traces. Folders may be URLs (``s3://bucket/job/``)."""

from __future__ import annotations

import logging
import re
from typing import Optional

from chakra.errors import ChakraError
from chakra.fileio.location import Location, list_folder, name_of
from chakra.ingest.detect import TraceKind, peek_kind
from chakra.link.batch import TRACE_SUFFIXES, pair_by_rank, pair_ranks, rank_in_name
from chakra.pipeline.run import RankFiles
from chakra.progress import activity

logger = logging.getLogger(__name__)
#: PyTorch's ``tensorboard_trace_handler`` names Kineto traces ``<worker>.<ms>.pt.trace.json``.
PROFILER_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
# "et" as a word of a name (worker0.et.json, rank_et_3.json), not inside one (kineto)
_ET_WORD = re.compile(r"(?<![a-z])et(?![a-z])", re.IGNORECASE)


def is_device_name(name: str) -> bool:
    """Named like a Kineto trace: ``*kineto*.json[.gz]`` or ``*.pt.trace.json[.gz]``."""
    return name.endswith(PROFILER_SUFFIXES) or (
        "kineto" in name.lower() and name.endswith(TRACE_SUFFIXES)
    )


def is_host_name(name: str) -> bool:
    """Named like it may be a host ET: ``host`` or the word ``et`` in a ``.json[.gz]`` name
    that is not a Kineto trace's or one of our ET+ (``rank0.et_plus.json``)."""
    if not name.endswith(TRACE_SUFFIXES) or is_device_name(name) or "et_plus" in name:
        return False
    return "host" in name.lower() or _ET_WORD.search(name) is not None


def _host_traces(candidates: list[Location]) -> list[Location]:
    """The candidates whose content is a host ET (its head's keys say so); any other is left
    out with a warning naming what it is, unless other ranks have host ETs: then a rank
    whose only host-named file is not one is an error naming that file (its rank would
    otherwise be refused as having no host trace, naming only the folder)."""
    hosts, skipped = [], []
    for path in candidates:
        kind = peek_kind(path)
        if kind is TraceKind.HOST_ET:
            hosts.append(path)
        else:
            skipped.append((path, kind.value if kind is not None else "no trace recognised"))
    with_host = {rank_in_name(name_of(path)) for path in hosts}
    for path, what in skipped:
        rank = rank_in_name(name_of(path))
        if hosts and rank is not None and rank not in with_host:
            raise ChakraError(
                f"{path}: named like rank {rank}'s host execution trace but is not one "
                f"({what}), and the other ranks have host traces"
            )
        logger.warning("%s: named like a host execution trace but is not one (%s): skipped",
                       path, what)  # fmt: skip
    return hosts


def ranks_in_folder(folder: Location) -> list[RankFiles]:
    """Host and device traces of every rank in one folder. Kineto traces by name
    (:func:`is_device_name`: ours, the reference's ``kineto_<r>``, PyTorch's
    ``*.pt.trace.json``), ranked by the rank they record; host ETs by name
    (:func:`is_host_name`) and content, ranked by their names (paired by
    :func:`chakra.link.batch.pair_ranks`)."""
    with activity(f"pairing the host and Kineto traces in {folder}"):
        listed = [(name_of(p), p) for p in list_folder(folder)]
        devices = [p for name, p in listed if is_device_name(name)]
        hosts = _host_traces([p for name, p in listed if is_host_name(name)])
        pairs = pair_ranks(hosts, devices, folder, folder)
    if not hosts:
        logger.info(
            "%s: no host execution traces: each rank's host side is made from its Kineto trace",
            folder,
        )
    return [RankFiles(pair.rank, pair.host, pair.device) for pair in pairs]


def ranks_in_folders(host_dir: Optional[Location], device_dir: Location) -> list[RankFiles]:
    """Every rank present in both a folder of host traces and one of Kineto traces, paired
    by rank (:func:`chakra.link.batch.pair_by_rank`); without ``host_dir``, every rank of
    the Kineto folder alone."""
    what = f"the host traces in {host_dir} with " if host_dir is not None else ""
    with activity(f"pairing {what}the Kineto traces in {device_dir}"):
        pairs = pair_by_rank(host_dir, device_dir)
    return [RankFiles(pair.rank, pair.host, pair.device) for pair in pairs]
