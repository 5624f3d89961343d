"""Node-name patterns as the command line takes them (``--scale``, the visualizer's
``--name-filter``): shell-style, ``*`` any run of characters and ``?`` one, matched against
the whole name; every other character is itself (``[`` too: op names hold brackets). A
pattern is translated into an anchored regular expression without nested repetition, so
matching it takes time linear in the name, whatever the pattern."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable

from chakra.errors import ChakraError

#: Longer patterns are refused: node names are far shorter.
MAX_PATTERN_LENGTH = 1_000


def escaped(pattern: str) -> str:
    """``pattern`` for :mod:`fnmatch` with its brackets taken literally."""
    return "".join({"[": "[[]", "]": "[]]"}.get(c, c) for c in pattern)


def has_wildcard(pattern: str) -> bool:
    """Whether ``pattern`` holds ``*`` or ``?``."""
    return any(c in pattern for c in "*?")


def compile_name_pattern(pattern: str) -> re.Pattern:
    """The compiled form of ``pattern`` (ChakraError when it is empty or over
    :data:`MAX_PATTERN_LENGTH` characters)."""
    if not pattern:
        raise ChakraError("an empty name pattern")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise ChakraError(f"a name pattern of {len(pattern):,} characters (at most "
                          f"{MAX_PATTERN_LENGTH:,})")  # fmt: skip
    return re.compile(fnmatch.translate(escaped(pattern)), re.DOTALL)


def matching_names(pattern: str, names: Iterable[str]) -> set[str]:
    """The distinct ``names`` that ``pattern`` matches."""
    compiled = compile_name_pattern(pattern)
    return {name for name in set(names) if compiled.match(name)}
