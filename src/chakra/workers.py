"""The one process pool of the project (linking ranks, the pipeline's per-rank work), whose
workers end when the process that started them dies, however it dies (SIGKILL included):
an orphaned worker would otherwise wait on its task queue forever, holding its output pipes.

Two guards, in each worker: on Linux the kernel sends it SIGKILL when its parent exits
(``prctl(PR_SET_PDEATHSIG)``); everywhere, a daemon thread checks every
:data:`PARENT_CHECK_S` seconds that its parent is still the process that started it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

#: How often a worker checks that its parent lives (seconds).
PARENT_CHECK_S = 0.5
_PR_SET_PDEATHSIG = 1


def process_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes that end with this one (see the module doc)."""
    return ProcessPoolExecutor(
        max_workers=workers, initializer=end_with_parent, initargs=(os.getpid(),)
    )


def end_with_parent(parent_pid: int) -> None:
    """Make the calling process exit once ``parent_pid`` (its parent) is gone."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no libc prctl: the thread below still guards
            pass
    if os.getppid() != parent_pid:  # the parent died before this line ran
        os._exit(1)
    watcher = threading.Thread(target=_watch, args=(parent_pid,), name="end-with-parent")
    watcher.daemon = True
    watcher.start()


def _watch(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(PARENT_CHECK_S)
    os._exit(1)  # orphaned: reparented to init or a subreaper
