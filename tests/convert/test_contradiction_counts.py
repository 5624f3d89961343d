"""One truth about contradictions: the link report, the converter (its report and warnings)
and ``chakra_validate`` (which sees only the ``.et``) give the same counts of dependencies
the measured times contradict, by kind, on every trace we have; and a pageable copy whose
call returned before the copy ended is no host sync (issue #29, item 6).

Each tool runs as its command line does (``chakra_trace_link --report``, ``chakra_validate
--json``, in this process) except the converter, whose report and warnings come from
:func:`chakra.convert.convert_file` (the command prints them as log lines only).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any, NamedTuple, Optional

import pytest

from chakra.convert import convert_file
from chakra.synth import SynthOptions, generate_job
from chakra.synth.options import options_with_vintages
from tests.conftest import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "data" / "pytorch213"
PYTORCH213 = {
    "single": ("single/host_et.json.gz", "single/kineto.json.gz"),
    "gloo_rank0": ("gloo_2rank/rank0.host_et.json.gz", "gloo_2rank/rank0.kineto.json.gz"),
    "gloo_rank1": ("gloo_2rank/rank1.host_et.json.gz", "gloo_2rank/rank1.kineto.json.gz"),
}
SHARED = {
    "hta/simple_add": ("hta/simple_add.host_et.json.gz", "hta/simple_add.kineto.json.gz"),
    "param/linear": ("param/linear.host_et.json.gz", "param/linear.kineto.json.gz"),
}
VINTAGES = ("modern", "no_rf_id", "no_flows", "legacy_1_0_1", "tied_zero_ops",
            "pageable_async_copy", "worker_threads")  # fmt: skip


class Counts(NamedTuple):
    """What each tool said: contradictions by kind (None: the tool does not say), what the
    converter dropped itself (beyond what the linker left out), its warnings."""

    link: dict[str, int]
    converter: Optional[dict[str, int]]
    validate: Optional[dict[str, int]]
    dropped_here: int
    warnings: list[str]
    link_report: dict[str, Any]
    link_table: str


def run_tool(tool: str, *args: object, failing: bool = False) -> None:
    """Run a command in this process; it must succeed (or, ``failing``, may report
    problems: chakra_validate exits 1 on a graph ASTRA-sim could not run)."""
    module = importlib.import_module(f"chakra.cli.{tool}")
    with pytest.raises(SystemExit) as info:
        module.main([str(arg) for arg in args])
    allowed = (0, None, 1) if failing else (0, None)
    assert info.value.code in allowed, f"{tool} exited with {info.value.code}"


def three_tools(host: Path, kineto: Path, folder: Path, capsys: pytest.CaptureFixture) -> Counts:
    """Link, convert and validate one rank; what each says about contradictions."""
    folder.mkdir(parents=True, exist_ok=True)
    et_plus, report, et = folder / "et_plus.json", folder / "link.json", folder / "trace.0.et"
    capsys.readouterr()
    run_tool("trace_link", "--host-trace", host, "--device-trace", kineto, "--output-file",
             et_plus, "--report", report, "--log-level", "ERROR")  # fmt: skip
    table = capsys.readouterr().out
    linked = json.loads(report.read_text())
    converted = convert_file(et_plus, et)
    run_tool("validate", et, "--json", "--log-level", "ERROR", failing=True)
    (validated,) = json.loads(capsys.readouterr().out)["files"]
    # getattr and get: the code before #29 had neither, and fails on dropped_here instead
    return Counts(linked["contradictions"], getattr(converted, "contradictions", None),
                  validated.get("contradictions"), converted.contradicting_edges_dropped,
                  converted.warnings, linked, table)  # fmt: skip


def assert_agree(counts: Counts) -> None:
    """The three tools give the same counts by kind; the converter warns exactly when
    there are any, and says them. The converter drops nothing itself: every dependency the
    measured times contradict was found, counted and left out by the linker."""
    assert counts.dropped_here == 0, (
        f"the converter dropped {counts.dropped_here} dependencies contradicting the measured "
        f"times; the link report counted {counts.link or 'none'}"
    )
    assert counts.converter == counts.link
    assert counts.validate == counts.link
    said = [w for w in counts.warnings if "contradicting the measured times" in w]
    if counts.link:
        (line,) = said
        shown = ", ".join(f"{kind} {n}" for kind, n in sorted(counts.link.items()))
        assert f"not in the graph: {shown} " in line
    else:
        assert said == []


@pytest.mark.parametrize("case", sorted(PYTORCH213))
def test_the_tools_agree_on_the_pytorch213_fixtures(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    host, kineto = PYTORCH213[case]
    assert_agree(three_tools(FIXTURES / host, FIXTURES / kineto, tmp_path, capsys))


@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=[pytest.mark.slow] if c == "param/linear" else [])
             for c in sorted(SHARED)],
)  # fmt: skip
def test_the_tools_agree_on_the_shared_traces(
    case: str, shared_traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    host, kineto = SHARED[case]
    assert_agree(three_tools(shared_traces / host, shared_traces / kineto, tmp_path, capsys))


@pytest.mark.parametrize("vintage", VINTAGES)
def test_the_tools_agree_on_every_synthetic_vintage(
    vintage: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    base = SynthOptions(seed=5, ranks=2, steps=2, ops_per_step=60)
    flags = {"pageable_async_copy": {"pageable_async_copy": True},
             "worker_threads": {"worker_threads": True}}  # fmt: skip
    if vintage in flags:
        options = SynthOptions(seed=5, ranks=2, steps=2, ops_per_step=60, **flags[vintage])
    else:
        options = options_with_vintages(base, [] if vintage == "modern" else [vintage])
    job = generate_job(options, tmp_path / "job")
    for rank in job.ranks:
        counts = three_tools(rank.host_et, rank.kineto, tmp_path / f"rank{rank.rank}", capsys)
        assert_agree(counts)


# --- a constructed trace: a pageable copy whose call returned before the copy ended -----


def pageable_async_copy(folder: Path) -> tuple[Path, Path, dict]:
    """A one-rank synthetic job with ``--pageable-async-copy``: its host ET, its Kineto
    trace and the Kineto document."""
    options = SynthOptions(seed=3, ranks=1, steps=1, ops_per_step=70, pageable_async_copy=True)
    rank = generate_job(options, folder).ranks[0]
    return rank.host_et, rank.kineto, json.loads(rank.kineto.read_text())


def the_async_copy(events: list[dict]) -> tuple[dict, dict]:
    """The pageable copy ``cudaMemcpyAsync`` enqueued, and that call."""
    calls = {e["args"]["correlation"]: e for e in events
             if e.get("cat") == "cuda_runtime" and e["name"] == "cudaMemcpyAsync"}  # fmt: skip
    (copy,) = [e for e in events if e.get("cat") == "gpu_memcpy" and "Pageable" in e["name"]
               and e["args"]["correlation"] in calls]  # fmt: skip
    return copy, calls[copy["args"]["correlation"]]


def returns_early(
    kineto: Path,
    document: dict,
    call_name: str,
    copy_name: str = "Memcpy HtoD (Pageable -> Device)",
) -> Path:
    """The trace with its async pageable copy renamed ``copy_name`` (default: an HtoD copy
    from pageable memory), enqueued by ``call_name``, and that call returning 3 us before
    the copy ended (staged; the copy itself ran later): the thread went on before the copy
    ended, and so did the host op after the call."""
    copy, call = the_async_copy(document["traceEvents"])
    copy["name"] = copy_name
    call["name"] = call_name
    copy_end = copy["ts"] + copy["dur"]
    call["dur"] = round(copy_end - 3 - call["ts"], 3)
    assert call["dur"] > 0
    path = kineto.with_name("early.kineto.json")
    path.write_text(json.dumps(document))
    return path


def outlasts_the_next_op(kineto: Path, document: dict) -> Path:
    """The trace with its async pageable copy made an HtoD copy from pageable memory that
    ran on until 5 us after the next host op on the calling thread started (its call
    returned when it did, long before)."""
    events = document["traceEvents"]
    copy, call = the_async_copy(events)
    copy["name"] = "Memcpy HtoD (Pageable -> Device)"
    call_end = call["ts"] + call["dur"]
    after = min(e["ts"] for e in events if e.get("cat") == "cpu_op"
                and e["tid"] == call["tid"] and e["ts"] >= call_end)  # fmt: skip
    copy["dur"] = round(after + 5 - copy["ts"], 3)
    path = kineto.with_name("late.kineto.json")
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("edit", ["call_returns_early", "copy_outlasts_next_op"])
def test_a_pageable_copy_that_ended_after_its_call_returned_is_no_host_sync(
    edit: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """An HtoD copy from pageable memory whose call returned before the copy ended, the
    thread going on (its own time after the call, or the next host op) before the copy
    ended. Before: the linker took it as a host sync of the op after the call. When that
    op started after the copy ended (``call_returns_early``), the link report said
    'contradictions: none' while the converter, which makes the call's own time wait for
    the copy, dropped the edge (1 dependency): the drop was silent in the link report.
    When it started before (``copy_outlasts_next_op``), the linker counted a host_sync
    contradiction. Now the linker does not emit it, counts it as a pageable copy that did
    not block (HtoD 1), and the three tools agree: no contradiction."""
    host, kineto, document = pageable_async_copy(tmp_path / "job")
    if edit == "call_returns_early":
        edited = returns_early(kineto, document, "cudaMemcpyAsync")
    else:
        edited = outlasts_the_next_op(kineto, document)
    counts = three_tools(host, edited, tmp_path / "out", capsys)
    assert_agree(counts)
    assert counts.link == {}
    assert counts.link_report.get("pageable_copies_not_blocking") == {"HtoD": 1}
    assert "pageable copies that did not block  HtoD 1" in counts.link_table
    linked = json.loads((tmp_path / "out" / "et_plus.json").read_text())
    vias = [d["via"] for d in linked["chakra_link"]["dependencies"] if d["kind"] == "host_sync"]
    assert "cudaMemcpyAsync" not in vias


def test_the_unchanged_async_pageable_copy_still_syncs(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The synthetic copy to pageable memory, whose call returned after the copy ended,
    is a host sync as before, and nothing is counted as not blocking."""
    host, kineto, _ = pageable_async_copy(tmp_path / "job")
    counts = three_tools(host, kineto, tmp_path / "out", capsys)
    assert_agree(counts)
    assert counts.link == {} and counts.link_report["pageable_copies_not_blocking"] == {}
    linked = json.loads((tmp_path / "out" / "et_plus.json").read_text())
    vias = [d["via"] for d in linked["chakra_link"]["dependencies"] if d["kind"] == "host_sync"]
    assert "cudaMemcpyAsync" in vias


def test_a_blocking_copy_that_returned_before_its_copy_ended_is_a_contradiction_all_report(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A device-to-device ``cudaMemcpy`` (no pageable end: the blocking API is believed)
    measured to return before its copy ended: the trace refutes the host sync. Before, the
    link report said none while the converter dropped it; now the linker checks it where
    the converter would put it (the call's own time), leaves it out, and all three tools
    report it: host_sync 1."""
    host, kineto, document = pageable_async_copy(tmp_path / "job")
    early = returns_early(kineto, document, "cudaMemcpy", "Memcpy DtoD (Device -> Device)")
    counts = three_tools(host, early, tmp_path / "out", capsys)
    assert_agree(counts)
    assert counts.link == {"host_sync": 1}
    assert "contradictions                      host_sync 1" in counts.link_table
