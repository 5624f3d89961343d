"""Progress of long loops over many items: a tqdm bar on a terminal, else a log line now and
then. Only loops over at least :data:`MIN_ITEMS` items report; the check costs one clock read
every :data:`CHECK_EVERY` items."""

from __future__ import annotations

import logging
import multiprocessing
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Optional, TypeVar

T = TypeVar("T")
logger = logging.getLogger(__name__)

#: Loops over fewer items stay silent.
MIN_ITEMS = 200_000
#: Items between two looks at the clock.
CHECK_EVERY = 4096
#: Seconds between two log lines when stderr is not a terminal.
LOG_EVERY_S = 10.0


def tracked(
    items: Iterable[T],
    total: int,
    what: str,
    *,
    min_items: int = MIN_ITEMS,
    log_every_s: float = LOG_EVERY_S,
    terminal: Optional[bool] = None,
) -> Iterator[T]:
    """Yield ``items`` (``total`` of them) unchanged, showing progress as ``what``: a tqdm
    bar when stderr is a terminal and this is the main process (workers of a pool would draw
    over each other; ``terminal`` overrides the check), else an INFO line
    ``what: N of TOTAL (P%)`` at most every ``log_every_s`` seconds."""
    if total < min_items:
        yield from items
        return
    if terminal is None:
        main = multiprocessing.current_process().name == "MainProcess"
        terminal = main and sys.stderr.isatty()
    if terminal:
        from tqdm import tqdm

        yield from tqdm(items, total=total, desc=what, unit=" items", file=sys.stderr,
                        miniters=CHECK_EVERY, leave=False)  # fmt: skip
        return
    last = time.monotonic()
    for count, item in enumerate(items, 1):
        if count % CHECK_EVERY == 0 and time.monotonic() - last >= log_every_s:
            last = time.monotonic()
            logger.info("%s: %d of %d (%.0f%%)", what, count, total, 100.0 * count / total)
        yield item
