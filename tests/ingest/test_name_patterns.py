"""Name patterns as --scale and --name-filter take them: shell wildcards over the whole name,
brackets literal; the compiled form agrees with fnmatch on the escaped pattern for any
pattern and name, and refuses only the empty and the overlong."""

from __future__ import annotations

import fnmatch

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chakra.errors import ChakraError
from chakra.ingest.name_patterns import compile_name_pattern, escaped, matching_names

NAMES = ["aten::mm", "aten::addmm", "nccl:all_reduce", "ncclKernel_AllReduce[1]", "[idle]"]


def test_wildcards_match_whole_names_and_brackets_are_literal() -> None:
    assert matching_names("aten::*", NAMES) == {"aten::mm", "aten::addmm"}
    assert matching_names("*mm", NAMES) == {"aten::mm", "aten::addmm"}
    assert matching_names("aten::mm", NAMES) == {"aten::mm"}  # whole name, not a substring
    assert matching_names("nccl", NAMES) == set()
    assert matching_names("*nccl*", NAMES) == {"nccl:all_reduce", "ncclKernel_AllReduce[1]"}
    assert matching_names("*NCCL*", NAMES) == set()  # case matters
    assert matching_names("ncclKernel_AllReduce[1]", NAMES) == {"ncclKernel_AllReduce[1]"}
    assert matching_names("[idle]", NAMES) == {"[idle]"}
    assert matching_names("aten::?m", NAMES) == matching_names("aten::m?", NAMES) == {"aten::mm"}


@pytest.mark.parametrize("pattern", ["", "x" * 1001])
def test_only_the_empty_and_the_overlong_are_refused(pattern: str) -> None:
    with pytest.raises(ChakraError, match="pattern"):
        compile_name_pattern(pattern)


alphabet = st.sampled_from("ab*?[]:\n")


@given(st.text(alphabet, min_size=1, max_size=12), st.text(alphabet, max_size=12))
def test_the_compiled_pattern_agrees_with_fnmatch(pattern: str, name: str) -> None:
    expected = fnmatch.fnmatchcase(name, escaped(pattern))
    assert (compile_name_pattern(pattern).match(name) is not None) == expected
