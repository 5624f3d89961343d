"""Ranges of Kineto event times: what the loader accepts, and how it words a refusal.

Times (``ts``) and durations (``dur``) must be finite and of magnitude below 2^63 (the
int64 arrays of the simulator and the ``.et`` fields); durations must not be negative.
msgspec decodes ``"nan"`` and ``"inf"`` strings as floats in lenient mode, so the loader
checks every timed event with one chained comparison (NaN fails every comparison).
"""

from __future__ import annotations

import math

from chakra.errors import PathLike, TraceFormatError

#: Exclusive bound of the magnitude of a time or duration, in microseconds.
LIMIT = 2**63


def timing_error(
    path: PathLike, index: int, name: str, ts_us: object, dur_us: float
) -> TraceFormatError:
    """The error for event ``index`` whose ``dur`` or (present) ``ts`` is out of range."""
    if not 0 <= dur_us < LIMIT:
        if isinstance(dur_us, float) and not math.isfinite(dur_us):
            problem = f"a non-finite duration {dur_us}"
        elif dur_us < 0:
            problem = f"a negative duration {dur_us}"
        else:
            problem = f"a duration of 2^63 us or more ({dur_us})"
    elif isinstance(ts_us, float) and not math.isfinite(ts_us):
        problem = f"a non-finite 'ts' {ts_us}"
    else:
        problem = f"a 'ts' of magnitude 2^63 us or more ({ts_us})"
    return TraceFormatError(path, f"event {index} ({name!r}) has {problem}")
