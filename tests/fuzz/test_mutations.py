"""Mutants of small valid inputs, every format through the tools that read it: each run must
end in a valid output or one clean error line (see :mod:`tests.fuzz.harness`).

By default a few dozen derandomized examples per format (about 30 s in all, tools run in
forked children): a failure whose signature :mod:`tests.fuzz.known` lists is tolerated, any
other fails the test with the mutation and the command. ``CHAKRA_FUZZ_EXAMPLES=N`` runs N
random examples per format instead and, rather than stopping at the first failure, collects
them all and fails at the end on the unknown ones; ``CHAKRA_FUZZ_REPORT=FOLDER`` writes each
format's catalogue there as ``<format>.json``. For a long run with reproducers kept, see
:mod:`tests.fuzz.campaign`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.campaign import Tally, print_catalogue
from tests.fuzz.harness import fork_tool
from tests.fuzz.known import todo_for
from tests.fuzz.targets import FORMATS, Finding, Seeds, fuzz_one

pytestmark = pytest.mark.slow

LONG_EXAMPLES = int(os.environ.get("CHAKRA_FUZZ_EXAMPLES", "0") or 0)
DEFAULT_EXAMPLES = {"host": 20, "kineto": 15, "et_plus": 20, "et": 30, "text": 20,
                    "chrome": 12, "astra_log": 12}  # fmt: skip
#: a hang is a failure; a mutant of these small seeds takes well under a second
CASE_TIMEOUT_S = 20.0


@pytest.mark.parametrize("format_name", list(FORMATS))
def test_mutants_keep_the_promise(fuzz_seeds: Seeds, tmp_path: Path, format_name: str) -> None:
    tally = Tally()
    unknown: list[Finding] = []

    @settings(max_examples=LONG_EXAMPLES or DEFAULT_EXAMPLES[format_name],
              derandomize=not LONG_EXAMPLES, database=None, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])  # fmt: skip
    @given(rng=st.randoms(use_true_random=False))
    def fuzz(rng) -> None:
        report = fuzz_one(fuzz_seeds, format_name, rng, tmp_path / "case", fork_tool,
                          timeout_s=CASE_TIMEOUT_S)  # fmt: skip
        for finding in report.findings:
            tally.add(format_name, finding)
            if todo_for(finding.signature) is not None:
                continue
            if LONG_EXAMPLES:
                unknown.append(finding)
                continue
            raise AssertionError(_describe(finding))

    fuzz()
    _report(format_name, tally)
    assert not unknown, "\n\n".join(_describe(f) for f in unknown[:5])


def _describe(finding: Finding) -> str:
    return (f"new failure {finding.signature}: {finding.reason}\nmutant: {finding.mutation}\n"
            f"command: {finding.command}\nstderr:\n{finding.stderr_tail}\n"
            "(fix it, or list its signature in tests/fuzz/known.py with what to fix)")  # fmt: skip


def _report(format_name: str, tally: Tally) -> None:
    folder = os.environ.get("CHAKRA_FUZZ_REPORT")
    if LONG_EXAMPLES:
        print_catalogue(tally)
    if folder:
        path = Path(folder)
        path.mkdir(parents=True, exist_ok=True)
        (path / f"{format_name}.json").write_text(json.dumps(tally.as_json(), indent=1))


def test_fuzz_one_is_reproducible(fuzz_seeds: Seeds, tmp_path: Path) -> None:
    """The same random choices give the same mutant and the same command."""
    import random

    first = fuzz_one(fuzz_seeds, "et", random.Random(5), tmp_path / "a", fork_tool)
    data = first.mutant.read_bytes()
    second = fuzz_one(fuzz_seeds, "et", random.Random(5), tmp_path / "b", fork_tool)
    assert second.mutant.read_bytes() == data
    assert str(first.mutation) == str(second.mutation)
    commands = [r.command_line().replace("/b/", "/a/") for r, _ in second.runs]
    assert [r.command_line() for r, _ in first.runs] == commands
