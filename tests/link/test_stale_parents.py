"""Exact ids over stale parents: an op whose unique Record function id and name agree with a
Kineto op is kept even where the host ET files it under an op that had ended when Kineto
shows it running (real gloo ranks file DDP's bucket copies and ``Optimizer.step`` under an
autograd ``evaluate_function``); it is re-parented where it ran, and the report counts it.

Made from the real single-process recording: ``Optimizer.step`` of step 1 is filed under the
last autograd op before it, as such a rank's host ET has it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from chakra.convert import ConvertOptions, convert_et_plus
from chakra.ingest import load_device_trace, load_host_trace
from chakra.link import LinkOptions, link_traces
from chakra.link.et_plus import as_et_plus
from chakra.simulate import build_graph, simulate
from tests.link.test_real_traces import FIXTURES

SINGLE = FIXTURES / "single"


def _stale(folder: Path) -> tuple[Path, int, int, int]:
    """The host ET with step 1's ``Optimizer.step`` under the last autograd op before it;
    (path, the op's id, its true parent, the stale one)."""
    with gzip.open(SINGLE / "host_et.json.gz") as raw:
        document = json.loads(raw.read())
    nodes = document["nodes"]
    step = min((n for n in nodes if n["name"].startswith("Optimizer.step")), key=lambda n: n["id"])
    autograd = max(
        (n for n in nodes if n["name"].startswith("autograd::engine::evaluate_function")
         and n["id"] < step["id"]), key=lambda n: n["id"])  # fmt: skip
    true_parent = step["ctrl_deps"]
    step["ctrl_deps"] = autograd["id"]
    path = folder / "host_et.json"
    path.write_text(json.dumps(document))
    return path, step["id"], true_parent, autograd["id"]


def test_a_stale_parent_does_not_leave_the_op_untimed(tmp_path: Path) -> None:
    path, op_id, true_parent, stale_parent = _stale(tmp_path)
    host = load_host_trace(path)
    assert next(op for op in host.ops if op.id == op_id).parent_id == stale_parent
    linked = link_traces(host, load_device_trace(SINGLE / "kineto.json.gz"), LinkOptions())
    report = linked.report
    # before: the op and 84 ops under it were rejected (untimed); now all are kept
    assert report.rejected == {} and report.unmatched_host_ops == 0
    assert report.host_ops_reparented == 1
    assert op_id in linked.matches
    under, _ = linked.ran_under[op_id]
    assert under == true_parent  # where Kineto shows it ran: ProfilerStep#1
    graph = build_graph(convert_et_plus(as_et_plus(linked), ConvertOptions()).nodes)
    (rank,) = simulate([graph]).ranks
    assert abs(rank.error_pct) < 0.01
