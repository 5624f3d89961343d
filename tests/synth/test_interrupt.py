"""chakra_synth interrupted mid-job (Ctrl-C, SIGTERM): its ranks run in lock step, so none is
finished; no file, no temporary and no folder it created stays, and one line says so."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

import chakra.synth.job as job
from chakra.cli.synth import main


def test_an_interrupted_synth_leaves_nothing_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    real, calls = job._job_collective, [0]

    def collective(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 3:  # every rank's files open and half written
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(job, "_job_collective", collective)
    out = tmp_path / "new" / "job"
    with caplog.at_level(logging.INFO), pytest.raises(SystemExit) as done:
        main(["--output-dir", str(out), "--ranks", "3", "--steps", "1", "--ops-per-step", "60"])
    assert done.value.code == 130
    assert capsys.readouterr().err.splitlines()[-1] == "chakra_synth: interrupted"
    assert calls[0] == 3 and list(tmp_path.iterdir()) == []
    assert any(m.startswith(f"interrupted: no file written into {out}") for m in caplog.messages)
