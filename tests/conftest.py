"""Shared fixtures: where the real public traces are, and small helpers for ET files."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def _session_graph_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The graph cache (:mod:`chakra.simulate.graph_cache`) of the whole run, and of the
    processes it starts, is a temporary folder: tests never write to ~/.cache. Module
    fixtures use this one; each test gets its own (:func:`graph_cache_dir`)."""
    folder = tmp_path_factory.mktemp("graph-cache-session")
    before = os.environ.get("CHAKRA_CACHE_DIR")
    os.environ["CHAKRA_CACHE_DIR"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("CHAKRA_CACHE_DIR", None)
    else:
        os.environ["CHAKRA_CACHE_DIR"] = before


@pytest.fixture(autouse=True)
def graph_cache_dir(
    _session_graph_cache: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: Any
) -> Path:
    """This test's own graph cache folder (empty when it begins; not inside ``tmp_path``,
    whose files some tests compare), in ``CHAKRA_CACHE_DIR``."""
    folder = tmp_path_factory.mktemp("graph-cache")
    monkeypatch.setenv("CHAKRA_CACHE_DIR", str(folder))
    return folder


def _shared_traces_dir() -> Path:
    configured = os.environ.get("CHAKRA_SHARED_TRACES")
    return Path(configured) if configured else REPO_ROOT.parent / "shared" / "traces"


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    """The folder of real public traces (``CHAKRA_SHARED_TRACES``, default ../shared/traces).

    Tests that need it skip when it is absent, except under ``CI=true`` where that fails.
    """
    folder = _shared_traces_dir()
    if not folder.is_dir():
        message = f"shared traces not found at {folder} (set CHAKRA_SHARED_TRACES)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return folder


def assert_one_line_error(
    load: Callable[[Path], Any], path: Path, expected: str, error: type = Exception
) -> Exception:
    """``load(path)`` raises ``error`` with one line that starts with the path and holds
    ``expected``; returns the exception for further checks."""
    with pytest.raises(error) as info:
        load(path)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    assert expected in message
    assert "\n" not in message
    return info.value


ASTRA_SIM_RUN = REPO_ROOT.parent / "shared" / "tools" / "astra-sim" / "run.py"


class AstraSim:
    """The real ASTRA-sim, through ``../shared/tools/astra-sim/run.py``: runs it on
    ``PREFIX.<r>.et`` and returns run.py's JSON verdict (``ok`` only when every node of
    every rank was issued and nothing was swallowed)."""

    def __init__(self, script: Path) -> None:
        self.script = script

    def run(self, prefix: Path, *options: str, timeout_s: float = 300) -> dict:
        import json
        import subprocess
        import sys

        proc = subprocess.run(
            [sys.executable, str(self.script), str(prefix), *options],
            capture_output=True, text=True, timeout=timeout_s,
        )  # fmt: skip
        try:
            return json.loads(proc.stdout)
        except ValueError:
            return {"ok": False, "problems": [f"run.py printed no JSON: {proc.stderr[-2000:]}"]}


@pytest.fixture(scope="session")
def astra_sim() -> AstraSim:
    """The shipped ASTRA-sim build (``CHAKRA_ASTRA_SIM`` names another run.py). Tests that
    need it skip when it is absent, except under ``CI=true`` where that fails."""
    configured = os.environ.get("CHAKRA_ASTRA_SIM")
    script = Path(configured) if configured else ASTRA_SIM_RUN
    if not script.is_file():
        message = f"ASTRA-sim's run.py not found at {script} (set CHAKRA_ASTRA_SIM)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return AstraSim(script)


def assert_astra_sim_ran_all(verdict: dict) -> None:
    """run.py's verdict says every node of every rank was issued, with nothing swallowed."""
    assert verdict.get("ok") is True, json_summary(verdict)
    assert all(r["issued"] == r["nodes"] and r["finished_ns"] is not None
               for r in verdict["ranks"]), json_summary(verdict)  # fmt: skip


def json_summary(verdict: dict) -> str:
    import json

    return json.dumps({k: verdict.get(k) for k in ("ok", "ranks", "problems", "notes")})[:3000]
