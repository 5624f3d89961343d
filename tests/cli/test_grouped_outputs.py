"""Tools that write several files commit them together: ``chakra_trace_link`` (the ET+ and
``--report``) and ``chakra_sim`` (``--timeline``, ``--plot``, ``--plot-makespans``). The
last rename failing removes the files already moved (``chakra_converter PyTorch``: see
test_converter_groups.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.cli.conftest import Runner, Traces


def _failing_rename(monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    """``os.replace`` fails (an I/O error) for the target ending in ``suffix``."""
    real: Callable[[Any, Any], None] = os.replace

    def replace(source: Any, target: Any) -> None:
        if str(target).endswith(suffix):
            raise OSError(5, "Input/output error")
        real(source, target)

    monkeypatch.setattr(os, "replace", replace)


def test_link_report_failing_leaves_no_et_plus(
    cli: Runner, traces: Traces, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _failing_rename(monkeypatch, "link.json")
    cli("trace_link", "--chakra-host-trace", traces.host, "--chakra-device-trace",
        traces.kineto, "--output-file", tmp_path / "r.et_plus.json", "--report",
        tmp_path / "link.json").one_line(1, "Input/output error")  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_sim_plot_failing_leaves_no_timeline(
    cli: Runner, traces: Traces, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _failing_rename(monkeypatch, ".png")
    cli("sim", traces.et, "--timeline", tmp_path / "t.json", "--plot", tmp_path / "u.png",
        "--plot-makespans", tmp_path / "m.svg").one_line(1, "Input/output error")  # fmt: skip
    assert list(tmp_path.iterdir()) == []
