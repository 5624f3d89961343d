"""Shared fixtures: where the real public traces are, and small helpers for ET files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


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
