"""chakra_sim and chakra_validate agree on ``.et`` mutants (:mod:`tests.fuzz.et_mutators`):
the validator (``--no-astra-sim``: ASTRA-sim's own limits are not the replay's) rejects a
graph exactly when chakra_sim refuses it for its checks, with the same count of each kind
of problem; a file one cannot read, neither can the other.

The issue: chakra_sim gave numbers for 140 of 850 mutants the validator rejects (invalid
node types, self deps, durations of 2^63 ns and more, attributes of another kind, dangling
deps, cycles), with exit 0 and no warning. The fast test checks a few hundred mutants with
the functions the tools call; the slow one runs both tools on 850 (``CHAKRA_FUZZ_EXAMPLES``
sets how many)."""

from __future__ import annotations

import json
import os
import random
import re
from collections import Counter
from pathlib import Path
from typing import Optional

import pytest

from chakra.errors import ChakraError, SimulationError
from chakra.et.graph_checks import validate_et
from chakra.simulate import load_graph
from chakra.simulate.load_checks import SIM_CHECKS
from tests.fuzz.harness import Case, fork_tool, run_case
from tests.fuzz.targets import Seeds, _mutate_et

REFUSED = "fails chakra_validate's checks ("
FAST_MUTANTS = 250
SLOW_MUTANTS = int(os.environ.get("CHAKRA_FUZZ_EXAMPLES", "0") or 0) or 850


def mutants(seeds: Seeds, folder: Path, count: int, seed: int = 30) -> list[Path]:
    """``count`` mutants of the ``.et`` seeds, the same ones every run."""
    rng = random.Random(seed)
    pool = [s for s in seeds.by_format["et"] for _ in range(s.weight)]
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for number in range(count):
        data, _ = _mutate_et(seeds, pool[rng.randrange(len(pool))], rng)
        path = folder / f"mutant{number:04d}.et"
        path.write_bytes(data)
        paths.append(path)
    return paths


def refused_counts(message: str) -> Optional[dict[str, int]]:
    """The counts of a refusal for the checks (None: not such a refusal)."""
    if REFUSED not in message:
        return None
    shown = message.split(REFUSED, 1)[1].split(");", 1)[0]
    return {kind: int(n.replace(",", "")) for n, kind in
            (part.split(" ") for part in shown.split(", "))}  # fmt: skip


def test_chakra_sim_refuses_what_the_validator_rejects(fuzz_seeds: Seeds, tmp_path: Path) -> None:
    seen: Counter = Counter()
    for path in mutants(fuzz_seeds, tmp_path, FAST_MUTANTS):
        try:
            verdict: Optional[dict[str, int]] = dict(validate_et(path, SIM_CHECKS).counts())
        except ChakraError:
            verdict = None  # unreadable
        try:
            load_graph(path, 0)
            refused: Optional[dict[str, int]] = {}
        except SimulationError as exc:
            refused = refused_counts(str(exc))
        except ChakraError:
            refused = None
        assert refused == verdict, (path, verdict, refused)
        seen["unreadable" if verdict is None else "rejected" if verdict else "valid"] += 1
    assert seen["rejected"] > 50 and seen["valid"] > 50, seen


@pytest.mark.slow
def test_the_tools_agree_on_the_mutants(fuzz_seeds: Seeds, tmp_path: Path) -> None:
    """``chakra_validate --no-astra-sim --json`` against ``chakra_sim`` (both resource
    models), each run as a user runs it."""
    seen: Counter = Counter()
    for number, path in enumerate(mutants(fuzz_seeds, tmp_path / "in", SLOW_MUTANTS)):
        out = tmp_path / "out"
        out.mkdir(exist_ok=True)
        checked, _ = run_case(Case("validate", (str(path), "--no-astra-sim", "--json"),
                                   (path,), (), out, stdout_json=True), fork_tool)  # fmt: skip
        try:
            (entry,) = json.loads(checked.stdout)["files"]
        except ValueError:  # not sniffed as a Chakra ET: refused before any check
            entry = {"error": checked.stderr}
        verdict = None if "error" in entry else entry["counts"]
        resources = ("threads-streams", "astra-sim")[number % 2]
        simulated, _ = run_case(Case("sim", (str(path), "--resources", resources), (path,), (),
                                     out), fork_tool)  # fmt: skip
        lines = simulated.stderr.splitlines()
        refused = refused_counts(lines[-1]) if simulated.returncode else {}
        if verdict is None:
            assert simulated.returncode == 1 and refused is None, (path, simulated.stderr)
        else:
            assert refused == verdict or (not verdict and refused is None), (
                path, resources, verdict, simulated.stderr)  # fmt: skip
        assert not re.search(r"Traceback", simulated.stderr)
        seen["unreadable" if verdict is None else "rejected" if verdict else "valid"] += 1
    assert seen["rejected"] > 100 and seen["valid"] > 100, seen
