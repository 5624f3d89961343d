"""Name filters (regular expressions given on the command line) that cannot blow up.

A backtracking matcher such as Python's ``re`` can take time exponential in the name's length
on some patterns, and a pattern can ask for more than it can compile. :func:`compile_filter`
refuses, with one line, before any node is read:

* a pattern longer than :data:`MAX_PATTERN_LENGTH` characters, or nested more than
  :data:`MAX_NESTING` groups deep;
* a repetition count above :data:`MAX_REPEAT_COUNT` (``a{1000000000}``: node names are far
  shorter, and ``re`` rejects counts from 2^32 - 1 with an ``OverflowError``);
* a repetition of variable length inside another one (``(a+)+``, ``(a*b?)*``,
  ``(x{1,3}){2,9}``), and an alternation inside a variable repetition (``(a|aa)*``,
  ``(nccl|.)+``; one of single characters, ``(a|b)*``, is a character class and fine): the
  shapes whose backtracking can be exponential. Inside a possessive repetition
  (``(?:a+|b)++``) or an atomic group (``(?>...)``), Python 3.11+, nothing backtracks into
  what they matched, and they are accepted.

Any other compile error (``re.error``, and the ``OverflowError``, ``RecursionError`` or
``MemoryError`` some patterns raise) is one line too.
"""

from __future__ import annotations

import re
from typing import Any

try:  # Python 3.11+
    from re import _constants as sre_constants  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.9, 3.10
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

from chakra.errors import NameFilterError

MAX_PATTERN_LENGTH = 1_000
MAX_REPEAT_COUNT = 1_000
MAX_NESTING = 50
_REPEATS = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT}
_UNBOUNDED = sre_constants.MAXREPEAT
_POSSESSIVE = getattr(sre_constants, "POSSESSIVE_REPEAT", None)  # Python 3.11+
_ATOMIC = getattr(sre_constants, "ATOMIC_GROUP", None)  # Python 3.11+
_SLOW = ", whose matching can take exponential time"


def _children(op: Any, av: Any) -> list[Any]:
    """The sub-patterns directly under one parsed item."""
    if op in _REPEATS or op is _POSSESSIVE:
        return [av[2]]
    if op is sre_constants.SUBPATTERN:
        return [av[-1]]
    if op is sre_constants.BRANCH:
        return list(av[1])
    if op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
        return [av[1]]
    if op is sre_constants.GROUPREF_EXISTS:
        return [branch for branch in av[1:] if branch is not None]
    if op is _ATOMIC:
        return [av]
    return []


def _problem(op: Any, av: Any, inside_variable: bool) -> str:
    """Why one parsed item is refused ("" when it is not)."""
    if op in _REPEATS or op is _POSSESSIVE:
        low, high = av[0], av[1]
        for count in (low, high):
            if count != _UNBOUNDED and count > MAX_REPEAT_COUNT:
                return f"a repetition count of {count:,} (at most {MAX_REPEAT_COUNT:,})"
        if op in _REPEATS and inside_variable and low != high:
            return f"a variable repetition inside another (as in (a+)+){_SLOW}"
    if op is sre_constants.BRANCH and inside_variable:
        return f"an alternation inside a variable repetition (as in (a|aa)*){_SLOW}"
    return ""


def _check(parsed: Any) -> None:
    """Walk the parse tree (iteratively) and raise on the first refused shape."""
    stack = [(parsed, False, 0)]
    while stack:
        pattern, inside_variable, depth = stack.pop()
        if depth > MAX_NESTING:
            raise NameFilterError(f"groups nested more than {MAX_NESTING} deep")
        for op, av in pattern:
            problem = _problem(op, av, inside_variable)
            if problem:
                raise NameFilterError(problem)
            if op is _POSSESSIVE or op is _ATOMIC:  # no backtracking into what they matched
                inner = False
            else:
                inner = inside_variable or (op in _REPEATS and av[0] != av[1])
            for child in _children(op, av):
                stack.append((child, inner, depth + 1))


def compile_filter(text: str) -> re.Pattern:
    """``text`` compiled for ``re.search``, or :class:`NameFilterError` with one line (see
    the module documentation for what is refused)."""
    shown = repr(text if len(text) <= 60 else text[:60] + "...")
    if len(text) > MAX_PATTERN_LENGTH:
        raise NameFilterError(
            f"name filter {shown} is longer than {MAX_PATTERN_LENGTH:,} characters"
        )
    try:
        _check(sre_parse.parse(text))
        return re.compile(text)
    except NameFilterError as exc:
        raise NameFilterError(f"name filter {shown} has {exc}") from None
    except re.error as exc:
        raise NameFilterError(f"name filter {shown} is not a regex: {exc}") from None
    except (OverflowError, RecursionError, MemoryError, ValueError) as exc:
        reason = str(exc) or type(exc).__name__
        raise NameFilterError(f"name filter {shown} cannot be compiled: {reason}") from None
