"""Parent cycles, and what the linker writes (issue 30, findings 2 and 5).

2. Nodes of a host ET or an ET+ that are each other's parents (``ctrl_deps``; an ET+ node's
   ``ran_under`` too), or a node naming itself: every tool that reads the file exits 1 within
   seconds with one line naming the file and the nodes of the cycle, and writes nothing
   (today's converter, simulator and pipeline follow the cycle forever; the linker passes it
   on).
5. Whatever ET+ the linker writes, the converter reads: a negative node id or ``start_ts`` is
   refused by the linker, before it writes anything; and every mutant host ET the linker
   accepts converts (mutants of :mod:`tests.fuzz.mutators`, linked and converted in this
   process).
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz import handmade
from tests.fuzz.checks import answer_within, convert, host_link, out_dir, sim
from tests.fuzz.harness import Case, Verdict, describe, fork_tool, run_case
from tests.fuzz.mutators import JsonSeed, dumps, mutate_json

#: The promise: an answer within a few seconds (today's code never answers).
ANSWER_S = 10.0
ROOT_NAMES = ("[pytorch|profiler|execution_trace|process]",
              "[pytorch|profiler|execution_trace|thread]")  # fmt: skip


def _ring(nodes: list[dict], size: int, key: str = "ctrl_deps") -> list[int]:
    """Make ``size`` ordinary host nodes each other's parents (``key``): node i's parent is
    node i+1, the last one's the first (one node names itself); returns their ids."""
    ordinary = [n for n in nodes if n["name"] not in ROOT_NAMES and "cat" not in n]
    ring = ordinary[10 : 10 + size]
    for child, parent in zip(ring, ring[1:] + ring[:1]):
        child[key] = parent["id"]
    return [node["id"] for node in ring]


def _cyclic_host(base: dict[str, Path], tmp_path: Path, size: int) -> tuple[Path, list[int]]:
    document = handmade.read_json(base["host"])
    ids = _ring(document["nodes"], size)
    return handmade.write_json(tmp_path / f"cycle{size}.host_et.json", document), ids


def _cyclic_et_plus(
    base: dict[str, Path],
    tmp_path: Path,
    size: int,
    layout: str = "et_plus",
    key: str = "ctrl_deps",
) -> tuple[Path, list[int]]:
    """An ET+ with a cycle, in the linker's line layout (read line by line) or ``compact``
    (read whole)."""
    document = handmade.read_json(base["et_plus"])
    ids = _ring(document["nodes"], size, key)
    target = tmp_path / f"cycle{size}.{layout}.et_plus.json"
    target.write_bytes(dumps(document, layout))
    return target, ids


def _refused(run: Case, source: Path, ids: list[int]) -> str:
    """Assert ``run`` exits 1 in time with one line naming ``source`` and every node of the
    cycle, writing nothing; returns the line."""
    result, outcome = run_case(dataclasses.replace(run, timeout_s=2 * ANSWER_S), fork_tool)
    assert outcome.verdict is Verdict.CLEAN_ERROR, describe(result, outcome)
    assert result.returncode == 1 and result.wall_s < ANSWER_S, describe(result, outcome)
    assert str(source) in outcome.reason and "cycle through nodes" in outcome.reason
    shown = [int(i) for i in re.findall(r"\d+", outcome.reason.split("cycle through nodes")[1])]
    assert sorted(set(shown)) == sorted(ids) and shown[0] == shown[-1], outcome.reason
    return outcome.reason


def _trace_info(source: Path, out: Path) -> Case:
    return Case("trace_info", (str(source),), (source,), (), out)


def _pipeline(host: Path, kineto: Path, out: Path) -> Case:
    return Case("pipeline", ("--host-trace", str(host), "--device-trace", str(kineto),
                             "--output-dir", str(out / "run"), "--no-plot"),
                (host, kineto), (), out)  # fmt: skip


@pytest.mark.parametrize("size", [1, 2, 3])
@pytest.mark.parametrize("tool", ["trace_link", "converter", "pipeline", "trace_info"])
def test_host_et_parent_cycle(base: dict[str, Path], tmp_path: Path, tool: str, size: int) -> None:
    source, ids = _cyclic_host(base, tmp_path, size)
    out = out_dir(tmp_path)
    run = {
        "trace_link": lambda: host_link(source, base["kineto"], out),
        "converter": lambda: convert(source, out, "--rank", "0"),
        "pipeline": lambda: _pipeline(source, base["kineto"], out),
        "trace_info": lambda: _trace_info(source, out),
    }[tool]()
    _refused(run, source, ids)


@pytest.mark.parametrize("layout", ["et_plus", "compact"])
@pytest.mark.parametrize("size", [1, 2, 3])
@pytest.mark.parametrize("tool", ["converter", "sim", "trace_info"])
def test_et_plus_parent_cycle(
    base: dict[str, Path], tmp_path: Path, tool: str, size: int, layout: str
) -> None:
    source, ids = _cyclic_et_plus(base, tmp_path, size, layout)
    out = out_dir(tmp_path)
    run = {"converter": convert, "sim": lambda s, o: sim(o, s), "trace_info": _trace_info}[tool]
    _refused(run(source, out), source, ids)


@pytest.mark.parametrize("size", [1, 2])
def test_et_plus_ran_under_cycle(base: dict[str, Path], tmp_path: Path, size: int) -> None:
    """A cycle over where ops ran (``ran_under``, which the converter follows before
    ``ctrl_deps``)."""
    source, ids = _cyclic_et_plus(base, tmp_path, size, key="ran_under")
    out = out_dir(tmp_path)
    assert "(ran_under)" in _refused(convert(source, out), source, ids)
    _refused(sim(out, source), source, ids)


def test_the_process_root_may_name_itself(base: dict[str, Path], tmp_path: Path) -> None:
    """PyTorch's process root names itself as its parent: no cycle (and the seeds, linked
    and converted from real traces, have one)."""
    document = handmade.read_json(base["host"])
    roots = [n for n in document["nodes"] if n["ctrl_deps"] == n["id"]]
    assert [n["name"] for n in roots] == [ROOT_NAMES[0]]
    out = out_dir(tmp_path)
    result, outcome = run_case(convert(base["host"], out, "--rank", "0"), fork_tool)
    assert outcome.verdict is Verdict.OK, describe(result, outcome)


# --- finding 5: the linker writes nothing the converter refuses -----------------------------


def _host_edited(base: dict[str, Path], tmp_path: Path, edit: Any) -> Path:
    document = handmade.read_json(base["host"])
    edit(document)
    return handmade.write_json(tmp_path / "edited.host_et.json", document)


def _negative_leaf_id(document: dict) -> None:
    parents = {n["ctrl_deps"] for n in document["nodes"]}
    leaf = next(n for n in document["nodes"][10:] if n["id"] not in parents)
    leaf["id"] = -3


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        pytest.param(_negative_leaf_id, "node id -3 is negative", id="negative-id"),
        pytest.param(lambda d: d.update(start_ts=-5), "header start_ts -5", id="negative-start_ts"),
    ],
)  # fmt: skip
def test_linker_refuses_what_the_converter_refuses(
    base: dict[str, Path], tmp_path: Path, edit: Any, problem: str
) -> None:
    source = _host_edited(base, tmp_path, edit)
    out = out_dir(tmp_path)
    result, outcome = run_case(host_link(source, base["kineto"], out), fork_tool)
    assert outcome.verdict is Verdict.CLEAN_ERROR and result.returncode == 1, describe(
        result, outcome
    )
    assert str(source) in outcome.reason and problem in outcome.reason
    assert not (out / "linked.json").exists()


#: Mutants linked then converted: ~0.15 s each.
MUTANTS = 160


def test_every_et_plus_the_linker_writes_converts(base: dict[str, Path], tmp_path: Path) -> None:
    """Mutants of a host ET (each with one to three tree operations, one in four also with a
    negative id, a negative header time or a parent cycle): whatever the linker writes, the
    converter reads and converts; what either refuses, it refuses with a ChakraError."""
    from chakra.convert import ConvertOptions, convert_et_plus, load_et_plus
    from chakra.errors import ChakraError
    from chakra.link.batch import link_files
    from chakra.link.linked_trace import LinkOptions

    seed = JsonSeed("host", handmade.read_json(base["host"]))
    rng = random.Random(30)
    linked, disagreements = 0, []
    for index in range(MUTANTS):
        data, mutation = mutate_json(seed, rng)
        if index % 4 == 0:
            try:
                document = json.loads(data)
            except ValueError:  # cut, or a number of thousands of digits
                document = None
            if _targeted(document, rng):
                data = json.dumps(document).encode()
        host = tmp_path / f"mutant{index}.host_et.json"
        host.write_bytes(data)
        target = tmp_path / f"mutant{index}.et_plus.json"
        try:
            with answer_within(20):
                link_files(host, base["kineto"], target, LinkOptions())
        except ChakraError:
            continue
        linked += 1
        try:
            with answer_within(20):
                convert_et_plus(load_et_plus(target), ConvertOptions(rank=0))
        except ChakraError as exc:
            disagreements.append(f"{mutation}: {exc}")
    assert not disagreements, "\n".join(disagreements)
    assert linked >= MUTANTS // 4  # the property was tested on enough linked mutants


def _targeted(document: Any, rng: random.Random) -> bool:
    """One of the edits finding 5 and finding 2 are about, on a decoded host ET (False:
    not a document it applies to)."""
    nodes = document.get("nodes") if isinstance(document, dict) else None
    if not isinstance(nodes, list) or not nodes or not all(isinstance(n, dict) for n in nodes):
        return False
    choice = rng.randrange(3)
    if choice == 0:
        rng.choice(nodes)["id"] = -rng.randrange(1, 1000)
    elif choice == 1:
        document[rng.choice(["start_ts", "finish_ts", "pid"])] = -rng.randrange(1, 1000)
    else:
        _ring([n for n in nodes if "ctrl_deps" in n and type(n.get("id")) is int
               and isinstance(n.get("name"), str)], 1 + rng.randrange(3))  # fmt: skip
    return True
