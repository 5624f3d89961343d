"""Golden outputs: the PyTorch 2.13 fixtures (``tests/data/pytorch213/``) linked and converted by
the tools, compared with the files committed under ``tests/data/golden/pytorch213/``.

Each fixture is run through ``chakra_trace_link`` (host ET + Kineto -> ET+ JSON),
``chakra_converter PyTorch`` (ET+ -> ``.et`` and its ``.comm_groups.json``) and
``chakra_jsonizer`` (``.et`` -> JSON, one node a line, which is what is compared for the
``.et``: reviewable, and the rendering of every field of the protobuf). The tools run in this
process, from the repository root with relative input paths (the ET+ records them). Each output
is compared with its golden file (the ``single/`` ones are gzipped: 1 MB of JSON each); a
mismatch fails with a short unified diff of the first differences.

Update: ``CHAKRA_UPDATE_GOLDEN=1 make test`` (or ``CHAKRA_UPDATE_GOLDEN=1 python -m pytest
tests/test_golden.py``) rewrites the golden files instead of comparing; review ``git diff``
before committing them.

Reviewed by hand (2026-12-04) against the raw inputs, read with ``json``/``gzip`` only:

* CPU-only recordings: no Kineto event of category ``kernel``, ``gpu_memcpy`` or
  ``gpu_memset`` (single: 1012 ``cpu_op``, 6 ``user_annotation``, 148 ``fwdbwd``, 1 ``Trace``;
  gloo: 126 / 125 ``cpu_op``), and so every ET+ report says ``gpu_ops_total`` 0 and
  ``streams`` [], and no ``.et`` node has a ``stream`` attribute or is a GPU node.
* single: the host ET has 1020 nodes, the two ``[pytorch|profiler|execution_trace|...]``
  roots and 1018 ops; the ET+ matches all 1018 by ``record_function_id`` and keeps the 1020
  nodes; the ``.et`` has 2037 COMP_NODEs, every one ``is_cpu_op`` true: the 1020, one
  ``[delay]`` and 1016 ``segment_of`` nodes, the stretches of a parent's own time between its
  children (69 for ``ProfilerStep#1``); no process group, so no ``.comm_groups.json``.
* gloo: the host ETs hold the ``c10d::`` ops of the recorded step (allreduce_,
  _allgather_base_, allgather_, broadcast_, _reduce_scatter_base_, alltoall_base_, alltoall_,
  barrier, then send on rank 0 / recv_ on rank 1) and nine ``gloo:*`` ops, which the ``.et``
  of each rank turns into 8 COMM_COLL_NODEs and 1 COMM_SEND_NODE (rank 0, comm_src 0 ->
  comm_dst 1) or COMM_RECV_NODE (rank 1), all ``is_cpu_op`` false, on pg "1" =
  ``{"1": [0, 1]}``. comm_type in program order: ALL_REDUCE, ALL_GATHER, ALL_GATHER,
  BROADCAST, ALL_REDUCE (gloo runs reduce_scatter_tensor as ``gloo:all_reduce``, as its host
  ET records), ALL_TO_ALL, ALL_TO_ALL, ALL_REDUCE with ``comm_type_original`` BARRIER (9);
  comm_size 64 bytes (a 4x4 float32 tensor) for the collectives, 16 for the 4-float
  send/recv, 0 for the barrier.
* Timestamps: each ET+ window (span of the host ET's ops) is 10.323 ms for single (its two
  Kineto ``ProfilerStep#`` events last 5.392 + 4.837 ms) and exactly the Kineto
  ``ProfilerStep#1`` duration for gloo (26.665377 / 24.518345 ms); ``.et`` durations are
  0..5598 us, summing to 10.27 ms for single.
"""

from __future__ import annotations

import difflib
import gzip
import importlib
import os
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

FIXTURES = Path("tests") / "data" / "pytorch213"  # relative to REPO_ROOT: the ET+ records it
GOLDEN = REPO_ROOT / "tests" / "data" / "golden" / "pytorch213"
UPDATE = os.environ.get("CHAKRA_UPDATE_GOLDEN") == "1"

# case -> (host ET, Kineto trace) relative to FIXTURES; the golden folder's files are named
# <case>.et_plus.json, <case>.et.json and <case>.comm_groups.json (+ .gz for big ones)
CASES = {
    "single/single": ("single/host_et.json.gz", "single/kineto.json.gz"),
    "gloo_2rank/rank0": ("gloo_2rank/rank0.host_et.json.gz", "gloo_2rank/rank0.kineto.json.gz"),
    "gloo_2rank/rank1": ("gloo_2rank/rank1.host_et.json.gz", "gloo_2rank/rank1.kineto.json.gz"),
}
GZIPPED = {"single/single"}
KINDS = ("et_plus.json", "et.json", "comm_groups.json")
DIFF_LINES = 40
LINE_CHARS = 240


def run_tool(tool: str, *args: object) -> None:
    module = importlib.import_module(f"chakra.cli.{tool}")
    with pytest.raises(SystemExit) as info:
        module.main([str(arg) for arg in args])
    assert info.value.code in (0, None), f"{tool} exited with {info.value.code}"


def produce(folder: Path, cases: dict) -> dict:
    """case -> kind -> the bytes the tools wrote for it, in ``folder``."""
    old_cwd = os.getcwd()
    os.chdir(REPO_ROOT)
    try:
        result = {}
        for case, (host, kineto) in cases.items():
            stem = folder / case.replace("/", "_")
            et_plus, et = Path(f"{stem}.et_plus.json"), Path(f"{stem}.et")
            run_tool("trace_link", "--host-trace", FIXTURES / host, "--device-trace",
                     FIXTURES / kineto, "--output-file", et_plus,
                     "--log-level", "ERROR")  # fmt: skip
            run_tool("converter", "--log-level", "ERROR", "PyTorch", "--input", et_plus,
                     "--output", et)  # fmt: skip
            run_tool("jsonizer", "--input_filename", et, "--output_filename",
                     f"{stem}.et.json", "--log-level", "ERROR")  # fmt: skip
            written = {kind: Path(f"{stem}.{kind}") for kind in KINDS}
            result[case] = {k: p.read_bytes() if p.exists() else None for k, p in written.items()}
    finally:
        os.chdir(old_cwd)
    return result


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return produce(tmp_path_factory.mktemp("golden"), CASES)


def golden_path(case: str, kind: str) -> Path:
    return GOLDEN / f"{case}.{kind}{'.gz' if case in GZIPPED else ''}"


def clip(line: str, column: int) -> str:
    """The diff mark of ``line`` and at most LINE_CHARS of the rest around ``column`` (ET+
    lines run to 2,000 characters)."""
    mark, text, column = line[:1], line[1:], max(0, column - 1)
    start = max(0, min(column - LINE_CHARS // 3, len(text) - LINE_CHARS))
    end = start + LINE_CHARS
    return mark + ("... " if start else "") + text[start:end] + (" ..." if end < len(text) else "")


def first_difference(a: str, b: str) -> int:
    """The first column where two diff lines differ, after their -/+ marks."""
    pairs = enumerate(zip(a[1:], b[1:]), start=1)
    return next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))


def short_diff(expected: bytes, actual: bytes, name: str) -> str:
    """A unified diff (1 line of context) of the first DIFF_LINES lines; long lines are cut
    around the first character where a removed line and its added counterpart differ."""
    lines = list(difflib.unified_diff(
        expected.decode("utf-8", "replace").splitlines(),
        actual.decode("utf-8", "replace").splitlines(),
        f"golden/{name}", f"now/{name}", n=1, lineterm="",
    ))  # fmt: skip
    shown = lines[:2]
    body = lines[2:]
    i = 0
    while i < len(body):
        removed = []
        while i < len(body) and body[i].startswith("-"):
            removed.append(body[i])
            i += 1
        added = []
        while i < len(body) and body[i].startswith("+"):
            added.append(body[i])
            i += 1
        for k, line in enumerate(removed):
            other = added[k] if k < len(added) else line
            shown.append(clip(line, first_difference(line, other)))
        for k, line in enumerate(added):
            other = removed[k] if k < len(removed) else line
            shown.append(clip(line, first_difference(line, other)))
        if i < len(body) and not body[i].startswith(("-", "+")):
            shown.append(clip(body[i], 0))
            i += 1
    more = f"\n... {len(shown) - DIFF_LINES} more diff lines" if len(shown) > DIFF_LINES else ""
    return "\n".join(shown[:DIFF_LINES]) + more


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", list(CASES))
def test_matches_golden(outputs: dict, case: str, kind: str) -> None:
    actual = outputs[case][kind]
    path = golden_path(case, kind)
    if actual is None:  # not written (no process group: no .comm_groups.json): no golden
        if UPDATE:
            path.unlink(missing_ok=True)
        assert not path.exists(), f"{path} exists but the tools no longer write it"
        return
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        if case in GZIPPED:  # no name, mtime 0: the same bytes for the same content
            path.write_bytes(gzip.compress(actual, compresslevel=9, mtime=0))
        else:
            path.write_bytes(actual)
        return
    assert path.is_file(), f"{path} missing: run with CHAKRA_UPDATE_GOLDEN=1 to write it"
    expected = gzip.decompress(path.read_bytes()) if case in GZIPPED else path.read_bytes()
    if actual != expected:
        name = path.relative_to(GOLDEN).as_posix()
        pytest.fail(
            f"{name} differs from its golden file (CHAKRA_UPDATE_GOLDEN=1 rewrites it):\n"
            + short_diff(expected, actual, name),
            pytrace=False,
        )


def test_outputs_are_deterministic(tmp_path: Path, outputs: dict) -> None:
    """Linking and converting again gives the same bytes (else no golden could hold)."""
    case = "gloo_2rank/rank0"
    assert produce(tmp_path, {case: CASES[case]}) == {case: outputs[case]}
