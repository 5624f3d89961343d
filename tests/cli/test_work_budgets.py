"""Work budgets on the command line: ``chakra_converter Text`` refuses a job over its budget
in one line naming the option that raises it, before it builds or writes anything;
``chakra_timeline_visualizer`` writes what the log holds, whatever ``--num_npus`` says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import ASTRA_SIM_LOG, Runner, Traces


def test_converter_text_over_budget_is_one_line_and_writes_nothing(
    cli: Runner, traces: Traces, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import chakra.text.convert as text

    def build(*_: Any, **__: Any) -> None:
        raise AssertionError("the graph was built before the budget was checked")

    monkeypatch.setattr(text, "build_npu_graph", build)
    out = tmp_path / "w"
    cli("converter", "Text", "--input", traces.text, "--output", out, "--num-npus", "65536",
        "--num-passes", "99999").one_line(1, "over the budget of 50,000,000 (--max-nodes "
                                          "raises it); nothing written")  # fmt: skip
    cli("converter", "Text", "--input", traces.text, "--output", out, "--num-npus", "4",
        "--num-passes", "1000", "--max-output-bytes", "1000").one_line(
        1, "over the budget of 1,000 bytes (--max-output-bytes raises it)")  # fmt: skip
    cli("converter", "--max_nodes", "10", "--input_type", "Text", "--input_filename",
        traces.text, "--output_filename", out, "--num_npus", "2", "--num_passes", "1").one_line(
        1, "20 nodes, over the budget of 10 (--max-nodes raises it)")  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_converter_text_help_names_the_budget(cli: Runner) -> None:
    shown = " ".join(cli("converter", "Text", "--help").stdout.split())
    assert "--max-nodes N refuse, before writing anything," in shown
    assert "(default: 50,000,000)" in shown and "(default: 4,294,967,296 = 4 GiB)" in shown


def test_converter_text_within_a_raised_budget(cli: Runner, traces: Traces, tmp_path) -> None:
    result = cli("converter", "Text", "--input", traces.text, "--output", tmp_path / "w",
                 "--num-npus", "2", "--num-passes", "3", "--max-nodes", "60")  # fmt: skip
    assert result.status == 0, result.errors
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.0.et", "w.1.et"]


def test_timeline_of_a_two_line_log_for_65536_npus_stays_small_regression(
    cli: Runner, tmp_path: Path
) -> None:
    """Reported: --num_npus 65536 turned a 2-line log into 36 MB (six metadata events for
    every NPU, with or without a record)."""
    log, out = tmp_path / "two.log", tmp_path / "t.json"
    log.write_text("\n".join(ASTRA_SIM_LOG.splitlines()[::2]) + "\n")  # npu 0: issue, callback
    result = cli("timeline_visualizer", "--input_filename", log, "--output_filename", out,
                 "--num_npus", "65536", "--npu_frequency", "1000")  # fmt: skip
    assert result.status == 0, result.errors
    assert out.stat().st_size < 2000
    events = json.loads(out.read_text())["traceEvents"]
    names = {(e["pid"], e["args"]["name"]) for e in events if e["name"] == "process_name"}
    assert names == {(0, "npu 0")}
    assert len([e for e in events if e["ph"] == "X"]) == 1
