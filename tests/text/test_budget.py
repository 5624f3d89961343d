"""The work budget of a text conversion (:mod:`chakra.text.budget`): the estimate matches
what is written, and a job over its budget (nodes, bytes, free space) is refused before any
graph is built or file written."""

from __future__ import annotations

import shutil
from collections import namedtuple
from pathlib import Path
from typing import Any

import pytest

import chakra.text.convert as convert_module
from chakra.errors import ChakraError, FileAccessError
from chakra.et import read_et
from chakra.text import convert_text, parse_workload
from chakra.text.budget import TextBudget, estimate_text_output
from chakra.text.convert import read_workload_text, workload_metadata

WORKLOADS = sorted((Path(__file__).parents[1] / "data" / "text_workloads").glob("*.txt"))


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda path: path.stem)
@pytest.mark.parametrize("passes", [1, 2, 3, 129, 1500])
def test_the_estimate_is_the_nodes_and_at_least_the_bytes_written(
    tmp_path: Path, workload: Path, passes: int
) -> None:
    text = read_workload_text(workload)
    estimate = estimate_text_output(parse_workload(text, workload), workload_metadata(text),
                                    passes)  # fmt: skip
    (path,) = convert_text(workload, tmp_path / "w", 1, passes)
    size = path.stat().st_size
    assert size <= estimate.bytes_per_file <= size * 1.05  # ids up to 3 bytes: 2.3% over
    assert estimate.nodes_per_file == len(read_et(path)[1])


def refuse_building(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building the graph fails the test: a refusal must come before it."""

    def build(*_: Any, **__: Any) -> None:
        raise AssertionError("the graph was built before the budget was checked")

    monkeypatch.setattr(convert_module, "build_npu_graph", build)


def test_65536_files_of_a_million_nodes_are_refused_before_any_work_regression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reported: --num-npus 65536 --num-passes 250000 (MICRO: 4 nodes a pass) wrote 1.3 GB
    in 25 s heading for 65,536 files of a million nodes."""
    refuse_building(monkeypatch)
    micro = next(path for path in WORKLOADS if path.stem == "MICRO")
    with pytest.raises(ChakraError) as refused:
        convert_text(micro, tmp_path / "w", 65536, 250_000)
    assert str(refused.value) == (
        f"{micro}: 65,536 files of 1,000,000 nodes would be 65,536,000,000 nodes, over the "
        "budget of 50,000,000 (--max-nodes raises it); nothing written"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_byte_budget_and_the_free_space(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refuse_building(monkeypatch)
    data = next(path for path in WORKLOADS if path.stem == "DATA")
    with pytest.raises(ChakraError, match=r"would take about 5\.6 MiB, over the budget of "
                       r"1\.0 MiB \(--max-output-bytes raises it\); nothing written$"):  # fmt: skip
        convert_text(data, tmp_path / "w", 10, 1000, TextBudget(max_output_bytes=1 << 20))
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _: usage(1 << 30, 1 << 30, 4096))
    with pytest.raises(FileAccessError, match=f"but {tmp_path} has only 4.0 KiB free"):
        convert_text(data, tmp_path / "w", 10, 1000)
    assert list(tmp_path.iterdir()) == []


def test_a_raised_budget_lets_the_job_through(tmp_path: Path) -> None:
    data = next(path for path in WORKLOADS if path.stem == "DATA")
    paths = convert_text(data, tmp_path / "w", 3, 10, TextBudget(max_nodes=300))
    assert len(paths) == 3
    with pytest.raises(ChakraError, match="would be 300 nodes, over the budget of 299"):
        convert_text(data, tmp_path / "v", 3, 10, TextBudget(max_nodes=299))
