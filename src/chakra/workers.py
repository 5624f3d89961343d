"""The one process pool of the project (linking ranks, the pipeline's per-rank work), whose
workers end when the process that started them dies, however it dies (SIGKILL included):
an orphaned worker would otherwise wait on its task queue forever, holding its output pipes.

Two guards, in each worker: on Linux the kernel sends it SIGKILL when its parent exits
(``prctl(PR_SET_PDEATHSIG)``); everywhere, a daemon thread checks every
:data:`PARENT_CHECK_S` seconds that its parent is still the process that started it.

Interrupted (the block of ``with process_pool(n)`` raises, e.g. Ctrl-C or SIGTERM), the
pool sends SIGTERM to its workers: a task under way raises
:class:`~chakra.errors.Terminated` and unwinds (its temporaries removed), then the worker
ends; an idle worker (or one passing a result back) only notes the signal, as it may hold a
queue's lock that raising there could leave held (a peer and the pool's shutdown then waited
for it forever), starts no task after it and ends on the sentinel the pool's shutdown sends
each worker; the pool waits for them, and tasks not started are cancelled. A worker treats
SIGINT (Ctrl-C reaches the whole process group) the same way, raising KeyboardInterrupt, so
it prints nothing: the parent reports. Workers start with
both signals held back until their handlers are set (a signal in that window met the
parent's inherited handler and printed a traceback). A worker that dies without reporting
(kill -9, out of memory) makes the block raise :class:`~chakra.errors.WorkerDiedError`.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.context import BaseContext
from types import FrameType, TracebackType
from typing import Any, Callable, Optional

from chakra.errors import ChakraError, Terminated, WorkerDiedError

#: How often a worker checks that its parent lives (seconds).
PARENT_CHECK_S = 0.5
_PR_SET_PDEATHSIG = 1
_STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT})


_in_task = False  # in a worker: whether a task is running (what SIGTERM then does)
_stopped_by = 0  # in a worker: the stop signal received (0: none)
_started = False  # in a worker: whether the pool's initializer is done


class _Pool(ProcessPoolExecutor):
    """A ProcessPoolExecutor whose tasks run under :func:`_task` and whose workers are told
    to stop (SIGTERM) when its block raises."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        # Workers are started here: with SIGTERM and SIGINT held back, so that one arriving
        # before a worker's handlers are set is not met by the parent's (which raise) in a
        # worker still starting; the worker's initializer lets them through.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            return super().submit(_task, fn, *args, **kwargs)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> bool:
        if exc_type is not None:
            for process in list((self._processes or {}).values()):
                with contextlib.suppress(OSError):
                    os.kill(process.pid, signal.SIGTERM)
        self.shutdown(wait=True, cancel_futures=exc_type is not None)
        if exc_type is not None and issubclass(exc_type, BrokenProcessPool):
            raise WorkerDiedError(
                "a worker process ended abruptly (killed by a signal, or out of memory); "
                "rerun with -j 1 to see its error, or with less work per process"
            ) from exc
        return False


def process_pool(workers: int, context: Optional[BaseContext] = None) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes that end with this one, and stop their tasks when
    the pool's block raises (see the module doc); ``context``: how they start (None: the
    platform's default)."""
    return _Pool(
        max_workers=workers, mp_context=context, initializer=_start_worker,
        initargs=(os.getpid(),),
    )  # fmt: skip


def cores_available() -> int:
    """How many cores this process may run on (its CPU affinity where the platform says)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether this platform starts processes by fork (what :func:`forked` needs to run its
    work beside this process; without it, the work runs here, at once)."""
    return "fork" in multiprocessing.get_all_start_methods()


#: In this process while :func:`forked` starts its worker: the work the worker inherits.
_inherited: Optional[Callable[[], Any]] = None


@contextlib.contextmanager
def forked(work: Callable[[], Any]) -> Iterator[Future]:
    """``work()`` begun now in a worker of a one-process :func:`process_pool` that a fork
    starts: it sees this process's memory as it is now, so nothing is pickled on the way
    in (objects over memoryviews cannot be); only its result or error comes back (pickled).
    Yields its future; leaving the block waits for the work, or stops it where the block
    raises. Where processes cannot fork, ``work`` runs here, at once."""
    global _inherited
    if not can_fork():
        done: Future = Future()
        try:
            done.set_result(work())
        except Exception as exc:
            done.set_exception(exc)
        yield done
        return
    with process_pool(1, multiprocessing.get_context("fork")) as pool:
        _inherited = work
        try:  # a fork pool starts its worker in the first submit
            future = pool.submit(_run_inherited)
        finally:
            _inherited = None
        yield future


def _run_inherited() -> Any:
    if _inherited is None:
        raise RuntimeError("forked: the worker did not inherit its work")
    return _inherited()


def _start_worker(parent_pid: int) -> None:
    global _started
    for stop in _STOP_SIGNALS:
        signal.signal(stop, _on_stop)
    end_with_parent(parent_pid)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)  # held back by submit
    _started = True


def _task(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    global _in_task
    _in_task = True
    try:
        if _stopped_by:  # stopped while idle: this task does not start
            raise Terminated() if _stopped_by == signal.SIGTERM else KeyboardInterrupt()
        return fn(*args, **kwargs)
    except Exception as exc:
        stand_in = _passable(exc)
        if stand_in is exc:
            raise
    finally:
        _in_task = False
        if _stopped_by:  # unwound: end here, never back to a task queue whose peers may be
            os._exit(128 + _stopped_by)  # gone (no queue lock is held during a task)
    # raised outside the handler: a context holding the original would be pickled with it
    # where tblib's reducers are installed (dask's distributed installs them)
    raise stand_in


def _passable(error: Exception) -> Exception:
    """``error`` when a copy of it reaches the parent (it pickles and unpickles), else a
    stand-in that does: a :class:`ChakraError` with the same message (the tools still
    report it as one line), or, for a bug, a ``RuntimeError`` naming its type, its message
    on the first line and the worker's traceback after. An error
    that cannot be unpickled would otherwise break the pool, reported as a dead worker."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:  # whatever the copy fails on, the stand-in passes
        if isinstance(error, ChakraError):
            return ChakraError(str(error))
        where = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        return RuntimeError(f"{type(error).__qualname__} in a worker process: {error}\n{where}")
    return error


def _on_stop(signum: int, frame: Optional[FrameType]) -> None:
    """In a worker, on SIGTERM or SIGINT (Ctrl-C reaches the whole process group): unwind
    the task under way (its clean-up runs, a second signal does not cut it short; then the
    worker ends, the parent reports). Outside a task, only note it: the worker then waits
    for work or passes a result back, under a queue's lock that an exception raised between
    its acquiring and the block that releases it would leave held, blocking the other
    workers and the pool's shutdown forever (a Ctrl-C of ``chakra_pipeline -j 2`` hung so
    about once in 20); it starts no task after this (:func:`_task`) and ends on the
    sentinel that the pool's shutdown sends every worker."""
    global _stopped_by
    if not _started:  # in the pool's initializer (which would print the exception): no lock
        os._exit(128 + signum)  # is held yet, end on the spot
    first = not _stopped_by
    _stopped_by = _stopped_by or signum
    if _in_task and first:
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


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
