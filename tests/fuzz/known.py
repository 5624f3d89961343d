"""Failure signatures today's code still shows under fuzzing: the TODO list of the fixes.

Each pattern (``fnmatch``, on :attr:`~tests.fuzz.harness.Outcome.signature`, which reads
``<tool>:<kind>[:<exception>@<chakra file>:<function> | :<detail>]``) says what to fix and
where. The mutation tests let a listed failure pass and fail on any other; when a fix lands,
remove its entries (a pattern that no longer matches anything is harmless, but stale).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Optional

KNOWN: dict[str, str] = {
    # Empty: every failure the fuzzing found is fixed and kept as a named regression test
    # (tests/fuzz/test_regressions*.py). A new failure goes here with what to fix, where.
}


def todo_for(signature: str) -> Optional[str]:
    """What to fix for a failure ``signature`` (None: not a known failure)."""
    for pattern, todo in KNOWN.items():
        if fnmatchcase(signature, pattern):
            return todo
    return None
