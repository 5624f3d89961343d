"""Load one rank's host ET and Kineto trace, one after the other or side by side: the Kineto
trace in a forked process while this one loads the host ET (:func:`load_rank_traces`).

Side by side, the Kineto load is hidden behind the host ET's (on the 50 MB rank of
``benchmarks/compare.py``: 0.24 s behind 0.43 s): the forked process sends its trace back
through a scratch file (:mod:`chakra.ingest.device_transfer`), read here once the host ET
is loaded (0.06 s). What comes out, and what goes wrong, is what loading one after the
other gives: when both files are bad, the Kineto trace's error is the one raised, as it is
loaded first there.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import msgspec

from chakra.errors import ChakraError, PathLike
from chakra.ingest import load_device_trace, load_host_trace
from chakra.ingest.device_model import DeviceTrace
from chakra.ingest.device_transfer import dump_device_trace, load_device_dump
from chakra.ingest.host_model import HostTrace
from chakra.workers import can_fork, forked


class RankTraces(msgspec.Struct, frozen=True):
    """A rank's two traces, loaded."""

    host: HostTrace
    device: DeviceTrace


def load_rank_traces(host_path: PathLike, device_path: PathLike, processes: int = 1) -> RankTraces:
    """Load ``host_path`` (a host ET) and ``device_path`` (its Kineto trace); ``processes``
    2 or more: side by side, where processes can fork. Raises as the loaders do."""
    if processes < 2 or not can_fork():
        device = load_device_trace(device_path)
        return RankTraces(load_host_trace(host_path), device)

    with tempfile.TemporaryDirectory(prefix="chakra-kineto-") as scratch:
        dump = Path(scratch) / "device.pickles"

        def dumped() -> None:  # in the forked process
            trace = load_device_trace(device_path)
            with dump.open("wb") as out:
                dump_device_trace(trace, out)

        with forked(dumped) as future:
            try:
                host = load_host_trace(host_path)
            except (ChakraError, OSError):  # a bad Kineto trace is the error shown, as first
                device_error = future.exception()
                if device_error is not None:
                    raise device_error from None
                raise
            future.result()
        with dump.open("rb") as dumped_trace:
            return RankTraces(host, load_device_dump(dumped_trace))
