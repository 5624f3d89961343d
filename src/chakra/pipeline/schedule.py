"""Running the per-rank stages: a memory-bounded scheduler over futures, the peak-memory
estimate it uses, and a Dask distributed client for running them on a cluster."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Optional

from chakra.errors import ChakraError
from chakra.fileio.compressed import GZIP_MAGIC
from chakra.fileio.location import Location, is_url, open_url

logger = logging.getLogger(__name__)

#: Peak resident memory of linking + converting one rank, as a multiple of the uncompressed
#: size of its two input traces: each stage peaks at 1.5-1.8x (benchmarks/run_all.py).
PEAK_PER_INPUT_BYTE = 2

FIRST_COMPLETED = "FIRST_COMPLETED"


def uncompressed_size(path: Location) -> int:
    """Bytes of ``path`` once decompressed: for gzip, the ISIZE trailer (the last 4 bytes,
    the uncompressed size modulo 2**32 of the last gzip member, so an underestimate past
    4 GiB or for multi-member files); otherwise the file size; 0 if it cannot be read (the
    stage that opens it reports that). O(1): nothing is decompressed (for a URL, one
    request for the size and one for the trailer)."""
    if is_url(path):
        return _url_uncompressed_size(str(path))
    path = Path(path)
    try:
        size = path.stat().st_size
        if path.suffix != ".gz" or size < 18:
            return size
        with path.open("rb") as stream:
            if stream.read(2) != b"\x1f\x8b":
                return size
            stream.seek(-4, 2)
            return int.from_bytes(stream.read(4), "little")
    except OSError:
        return 0


def _url_uncompressed_size(url: str) -> int:
    try:
        with open_url(url, "rb") as stream:
            size = stream.seek(0, 2)
            if not url.endswith(".gz") or size < 18:
                return size
            stream.seek(0)
            if stream.read(2) != GZIP_MAGIC:
                return size
            stream.seek(size - 4)
            return int.from_bytes(stream.read(4), "little")
    except (OSError, ChakraError):
        return 0


def estimate_peak_bytes(inputs: Sequence[Location]) -> int:
    """Estimated peak memory of preparing one rank: ``PEAK_PER_INPUT_BYTE`` times the
    uncompressed size of its input traces. A rough planning figure, not a bound."""
    return PEAK_PER_INPUT_BYTE * sum(uncompressed_size(path) for path in inputs)


def run_bounded(
    work: Sequence[Any],
    estimates: Sequence[int],
    submit: Callable[[Any], Any],
    wait: Callable[..., Any],
    *,
    max_in_flight: int,
    budget_bytes: Optional[int] = None,
    on_done: Optional[Callable[[Any], None]] = None,
) -> list[Any]:
    """Run ``submit(item)`` for every item of ``work`` in order, keeping at most
    ``max_in_flight`` futures pending and the sum of their ``estimates`` at most
    ``budget_bytes`` (one item always runs, however large). ``wait(futures,
    return_when="FIRST_COMPLETED")`` returns ``(done, not_done)``, as both
    ``concurrent.futures.wait`` and ``distributed.wait`` do. Returns the results in
    completion order; the first failure is raised after the pending futures are cancelled."""
    pending: dict[Any, int] = {}
    results: list[Any] = []
    in_use = 0
    index = 0
    try:
        while index < len(work) or pending:
            while (
                index < len(work)
                and len(pending) < max_in_flight
                and (
                    not pending or budget_bytes is None or in_use + estimates[index] <= budget_bytes
                )
            ):
                pending[submit(work[index])] = estimates[index]
                in_use += estimates[index]
                index += 1
            done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for future in done:
                in_use -= pending.pop(future)
                results.append(future.result())
                if on_done is not None:
                    on_done(results[-1])
    finally:
        for future in pending:
            future.cancel()
    return results


@contextlib.contextmanager
def dask_client(scheduler: str) -> Iterator[Any]:
    """A ``distributed.Client`` for ``scheduler``: a scheduler address (``tcp://host:8786``)
    or ``local:N`` for a LocalCluster of N single-threaded worker processes on this machine.
    Closed (and the local cluster shut down) on exit."""
    try:
        import distributed
    except ImportError:
        raise ChakraError(
            "--executor dask needs Dask distributed: pip install 'chakra[dask]'"
        ) from None
    cluster = None
    try:
        if scheduler.startswith("local:"):
            workers = _local_workers(scheduler)
            cluster = distributed.LocalCluster(
                n_workers=workers, processes=True, threads_per_worker=1, dashboard_address=None
            )
            client = distributed.Client(cluster)
        else:
            client = distributed.Client(scheduler, timeout="30s")
    except (OSError, TimeoutError) as exc:
        if cluster is not None:
            cluster.close()
        raise ChakraError(f"cannot connect to Dask scheduler {scheduler}: {exc}") from exc
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _local_workers(scheduler: str) -> int:
    count = scheduler.removeprefix("local:")
    if not count.isdigit() or int(count) < 1:
        raise ChakraError(f"--scheduler {scheduler}: expected local:N with N >= 1 workers")
    return int(count)


def dask_wait() -> Callable[..., Any]:
    """``distributed.wait`` (imported only when the Dask executor is used)."""
    import distributed

    return distributed.wait
