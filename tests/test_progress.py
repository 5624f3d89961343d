"""``chakra.progress.tracked``: the items pass unchanged; a bar on a terminal, log lines
otherwise, nothing for small loops."""

from __future__ import annotations

import logging

import pytest

from chakra.progress import CHECK_EVERY, tracked


def test_small_loops_are_silent(caplog: pytest.LogCaptureFixture, capsys) -> None:
    with caplog.at_level(logging.INFO):
        assert list(tracked(range(10), 10, "x", log_every_s=0)) == list(range(10))
    assert not caplog.records and not capsys.readouterr().err


def test_log_lines_off_a_terminal(caplog: pytest.LogCaptureFixture) -> None:
    total = 3 * CHECK_EVERY
    with caplog.at_level(logging.INFO, logger="chakra.progress"):
        items = list(tracked(range(total), total, "writing t.et", min_items=0, log_every_s=0,
                             terminal=False))  # fmt: skip
    assert items == list(range(total))
    assert [r.getMessage() for r in caplog.records][
        -1
    ] == f"writing t.et: {total} of {total} (100%)"


def test_a_bar_on_a_terminal(capsys) -> None:
    total = 2 * CHECK_EVERY
    assert sum(tracked(range(total), total, "writing", min_items=0, terminal=True)) == sum(
        range(total)
    )
    assert "writing" in capsys.readouterr().err
