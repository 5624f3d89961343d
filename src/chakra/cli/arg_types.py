"""argparse ``type=`` functions shared by the tools: a value out of range is refused while
parsing, as argparse refuses a malformed one (one line, exit status 2), before any work.

The caps, and why:

* :data:`MAX_NPUS` (65,536 = 2^16) NPUs for the tools that make something per NPU
  (``chakra_generator``, ``chakra_converter Text``: a file each, the latter within its work
  budget, ``--max-nodes`` and ``--max-output-bytes``: :mod:`chakra.text.budget`;
  ``chakra_timeline_visualizer`` only bounds the NPU ids of the log with it). It is larger
  than any system ASTRA-sim's example configurations describe; 2^20 would make the generator
  a million files per family.
* :data:`MAX_PASSES` (1,000,000) training passes of ``chakra_converter Text``: every pass adds
  at least one node to every file, and a file is built in memory (see
  :data:`chakra.text.budget.MAX_NODES_PER_NPU` for the cap on the nodes themselves).
* :data:`MAX_JOBS` (1,024) worker processes: more exhaust file descriptors and memory before
  they help on any one machine.
* :data:`INT64_MAX`: sizes, durations and ids go into the ET's 64-bit fields.
"""

from __future__ import annotations

import argparse
import math
import re
from typing import Callable, Union

INT64_MAX = 2**63 - 1
MAX_NPUS = 65_536
MAX_PASSES = 1_000_000
MAX_JOBS = 1_024
#: Characters of a refused value quoted in the message.
SHOWN = 40


def _shown(text: str) -> str:
    return repr(text if len(text) <= SHOWN else text[:SHOWN] + "...")


def int_in(low: int, high: int, name: str = "integer") -> Callable[[str], int]:
    """An argparse type: an integer from ``low`` to ``high`` (both included)."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip().replace("_", ""), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"must be an integer from {low:,} to {high:,}, not {_shown(text)}"
            )
        return value

    parse.__name__ = name
    return parse


def float_in(
    low: float, high: float = math.inf, *, low_open: bool = False, name: str = "number"
) -> Callable[[str], float]:
    """An argparse type: a finite number from ``low`` (excluded when ``low_open``) to
    ``high``; ``nan`` and infinities are refused."""
    above = "above" if low_open else "at least"
    upper = f" and at most {high:g}" if math.isfinite(high) else ""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not a number") from None
        in_range = (value > low if low_open else value >= low) and value <= high
        if not math.isfinite(value) or not in_range:
            raise argparse.ArgumentTypeError(
                f"must be a finite number {above} {low:g}{upper}, not {_shown(text)}"
            )
        return value

    parse.__name__ = name
    return parse


positive_int = int_in(1, INT64_MAX, "positive integer")
nonneg_int = int_in(0, INT64_MAX, "non-negative integer")
npus = int_in(1, MAX_NPUS, "NPU count")
passes = int_in(1, MAX_PASSES, "pass count")
jobs = int_in(1, MAX_JOBS, "job count")
finite_positive = float_in(0.0, low_open=True, name="positive number")
fraction = float_in(0.0, 1.0, name="fraction")


def profiler_step(text: str) -> Union[int, str]:
    """An argparse type: a ProfilerStep number, ``last`` or ``all``."""
    if text.strip().lower() in ("last", "all"):
        return text.strip().lower()
    try:
        return nonneg_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"{_shown(text)}: a ProfilerStep number, 'last' or 'all'"
        ) from None


def file_prefix(text: str) -> str:
    """An argparse type: the first part of file names (``workload`` of ``workload.0.et``),
    not empty and without a folder."""
    if not text or "/" in text or "\\" in text or text in (".", ".."):
        raise argparse.ArgumentTypeError(f"{_shown(text)}: a file name prefix, without '/'")
    return text


def scheduler_address(text: str) -> str:
    """An argparse type: a Dask scheduler's address, ``SCHEME://HOST[:PORT]`` or
    ``HOST:PORT``, or ``local:N`` (N >= 1 local worker processes)."""
    count = text.removeprefix("local:")
    if text.startswith("local:"):
        if count.isdigit() and int(count) >= 1:
            return text
    elif re.fullmatch(r"[a-z][a-z0-9+.-]*://\S+|[^\s:/]+:\d+", text):
        return text
    raise argparse.ArgumentTypeError(
        f"{_shown(text)}: expected tcp://HOST:PORT, HOST:PORT or local:N (N >= 1 workers)"
    )
