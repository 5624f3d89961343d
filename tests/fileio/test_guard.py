"""refuse_overwriting_inputs: an output is refused when it is an input by any name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chakra.fileio.guard import OutputOverwritesInputError, refuse_overwriting_inputs


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "in.et"
    path.write_bytes(b"input")
    return path


def test_same_path_by_another_spelling(source: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(source.parent)
    with pytest.raises(OutputOverwritesInputError, match="output would overwrite input"):
        refuse_overwriting_inputs([Path("sub/../in.et")], [source])


@pytest.mark.parametrize("link", [os.link, lambda target, name: Path(name).symlink_to(target)])
def test_a_link_to_an_input(source: Path, link) -> None:
    alias = source.parent / "out.json"
    link(source, alias)
    with pytest.raises(OutputOverwritesInputError) as info:
        refuse_overwriting_inputs([None, alias], [None, source])
    assert str(info.value) == f"{alias}: output would overwrite input {source}"


def test_an_input_that_links_to_the_output(source: Path) -> None:
    alias = source.parent / "alias.et"
    alias.symlink_to(source)
    with pytest.raises(OutputOverwritesInputError):
        refuse_overwriting_inputs([source], [alias])


def test_a_folder_link_to_the_inputs_folder(source: Path, tmp_path: Path) -> None:
    (tmp_path / "view").symlink_to(source.parent)
    with pytest.raises(OutputOverwritesInputError):
        refuse_overwriting_inputs([tmp_path / "view" / "in.et"], [source])


def test_two_outputs_of_one_entry_but_not_two_links_to_one_file(tmp_path: Path) -> None:
    with pytest.raises(OutputOverwritesInputError, match="given for two outputs"):
        refuse_overwriting_inputs([tmp_path / "a.png", tmp_path / "x" / ".." / "a.png"], [])
    target = tmp_path / "t"
    target.write_text("")
    for name in ("b", "c"):
        (tmp_path / name).symlink_to(target)
    refuse_overwriting_inputs([tmp_path / "b", tmp_path / "c"], [])  # each link is replaced


def test_distinct_and_missing_files_and_urls(source: Path, tmp_path: Path) -> None:
    refuse_overwriting_inputs([tmp_path / "new.et", "memory://a/b.et"], [source, "memory://a/c"])
    with pytest.raises(OutputOverwritesInputError):
        refuse_overwriting_inputs(["memory://a/b.et"], ["memory://a/b.et"])
