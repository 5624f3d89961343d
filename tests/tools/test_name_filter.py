"""Name filters: compile errors and patterns that could take exponential time are one line."""

from __future__ import annotations

import time

import pytest

from chakra.tools.name_filter import NameFilterError, compile_filter


@pytest.mark.parametrize(
    "text",
    ["nccl", "aten::(mm|addmm)", "^nccl.*AllReduce", "(a|b)*", "(?:a{2}){3}", "gemm|nccl",
     "x{1000}", "(?:a+|b)++", "(?>(a+|b))*"],
)  # fmt: skip
def test_ordinary_filters_compile(text: str) -> None:
    assert compile_filter(text).pattern == text


@pytest.mark.parametrize(
    ("text", "reason"),
    [("a{1000000000}", "has a repetition count of 1,000,000,000 (at most 1,000)"),
     ("a{4294967296}", "cannot be compiled: the repetition number is too large"),
     ("(a+)+$", "a variable repetition inside another"),
     ("(a*b?)*", "a variable repetition inside another"),
     ("(x{1,3}){2,9}", "a variable repetition inside another"),
     ("(a|aa)*$", "an alternation inside a variable repetition"),
     ("(nccl|.)+", "an alternation inside a variable repetition"),
     ("[", "is not a regex: unterminated character set"),
     ("(" * 60 + ")" * 60, "groups nested more than 50 deep"),
     ("x" * 1001, "is longer than 1,000 characters")],
)  # fmt: skip
def test_refused_filters_are_one_line(text: str, reason: str) -> None:
    with pytest.raises(NameFilterError) as info:
        compile_filter(text)
    message = str(info.value)
    assert message.startswith("name filter ") and reason in message and "\n" not in message


def test_huge_repetition_regression() -> None:
    """Reported: ``chakra_visualizer --name-filter 'a{1000000000}'`` ended in re.error,
    OverflowError or MemoryError rather than one line."""
    start = time.monotonic()
    for count in (10**9, 2**32 - 1, 2**32, 10**30):
        with pytest.raises(NameFilterError):
            compile_filter(f"a{{{count}}}")
    assert time.monotonic() - start < 5
