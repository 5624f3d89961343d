"""One command-line convention (issue 32): every console script's ``--help`` shows hyphenated
options only, no parser matches prefixes, and every spelling of the reference tools still
works (real runs on small inputs)."""

from __future__ import annotations

import argparse
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import Runner, Traces
from tests.cli.test_launch import SCRIPTS

#: A long option spelled with an underscore, anywhere in a help text.
UNDERSCORE_FLAG = re.compile(r"(?<![\w-])--[a-z0-9-]*_[\w-]*")


def _script_params() -> list[object]:
    return [pytest.param(name) for name in sorted(SCRIPTS)]


def _parser(script: str) -> argparse.ArgumentParser:
    assert SCRIPTS[script] == f"chakra.cli.launch:{script}"  # launch runs chakra.cli.<tool>
    return importlib.import_module(f"chakra.cli.{script.removeprefix('chakra_')}").build_parser()


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """The parser and its subcommands' parsers."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_every_script_is_checked() -> None:
    assert len(SCRIPTS) >= 12 and "chakra_jsonizer" in SCRIPTS


@pytest.mark.parametrize("script", _script_params())
def test_help_shows_hyphenated_options_only(script: str) -> None:
    for parser in _parsers(_parser(script)):
        text = parser.format_help()
        assert not UNDERSCORE_FLAG.findall(text), (parser.prog, UNDERSCORE_FLAG.findall(text))
        for action in parser._actions:  # each option's first (shown) spelling is hyphenated
            if action.option_strings and action.help != argparse.SUPPRESS:
                assert "_" not in action.option_strings[0], (parser.prog, action.option_strings)


@pytest.mark.parametrize("script", _script_params())
def test_no_parser_matches_prefixes(script: str) -> None:
    for parser in _parsers(_parser(script)):
        assert parser.allow_abbrev is False, parser.prog


def test_a_prefix_is_not_an_option(cli: Runner, traces: Traces, tmp_path: Path) -> None:
    outcome = cli("jsonizer", "--inp", traces.et, "--output", tmp_path / "j.json")
    outcome.one_line(2, "required: --input")  # --inp is not taken for --input
    assert not (tmp_path / "j.json").exists()


def test_converter_help_leads_with_the_conversions() -> None:
    text = _parser("chakra_converter").format_help()
    usage = text.split("\n\n")[0].splitlines()
    assert usage[0] == "usage: chakra_converter PyTorch --input ET+.json --output OUT.et [options]"
    text_line = "chakra_converter Text --input WORKLOAD.txt --output PREFIX --num-npus N"
    assert usage[1].split() == [*text_line.split(), "--num-passes", "P", "[options]"]
    assert "--input_type" not in text and "--no-gaps" not in text  # the flat interface hidden


def test_errors_name_options_by_their_shown_spelling(cli: Runner, traces: Traces) -> None:
    line = cli("converter", "Text", "--input", traces.text).one_line(2, "--output")
    assert "--num-npus" in line and "_" not in line.split("required:")[1]


#: (tool, arguments, files it must write): ``{name}`` is a path of :class:`Traces`; the run's
#: folder is the current one. The reference's spellings first, then ours.
REFERENCE_RUNS = {
    "jsonizer --input_filename": ("jsonizer", ["--input_filename", "{et}", "--output_filename",
                                               "j.json"], ["j.json"]),
    # the reference's combine_trace.sh: argparse's prefixes of --input_filename/--output_filename
    "jsonizer --input (reference script)": ("jsonizer", ["--input", "{et}", "--output",
                                                         "j.json"], ["j.json"]),
    "timeline_visualizer underscores": (
        "timeline_visualizer", ["--input_filename", "{astra_log}", "--output_filename", "t.json",
                                "--num_npus", "2", "--npu_frequency", "1", "--log_filename",
                                "t.log"], ["t.json", "t.log"]),
    "generator underscores": (
        "generator", ["--num_npus", "2", "--default_runtime", "5", "--default_tensor_size",
                      "1024", "--default_comm_size", "65536"], ["ALL_REDUCE.1.et"]),
    "converter 0.0.4 PyTorch": (
        "converter", ["--input_type", "PyTorch", "--input_filename", "{et_plus}",
                      "--output_filename", "c.et", "--log_filename", "c.log"], ["c.et", "c.log"]),
    "converter 0.0.4 Text": (
        "converter", ["--input_type", "Text", "--input_filename", "{text}", "--output_filename",
                      "w", "--num_npus", "2", "--num_passes", "1"], ["w.0.et", "w.1.et"]),
    "converter 1.0 PyTorch": (
        "converter", ["--log-filename", "c.log", "PyTorch", "--input", "{et_plus}", "--output",
                      "c.et", "--simulate"], ["c.et", "c.log"]),
    "converter 1.0 Text": (
        "converter", ["Text", "--input", "{text}", "--output", "w", "--num-npus", "2",
                      "--num-passes", "1"], ["w.0.et", "w.1.et"]),
    "trace_link r126": ("trace_link", ["--pytorch-et-file", "{host}", "--kineto-file",
                                       "{kineto}", "--output-file", "l.json"], ["l.json"]),
    "trace_link 1.0": ("trace_link", ["--chakra-host-trace", "{host}", "--chakra-device-trace",
                                      "{kineto}", "--output-file", "l.json", "--rank", "0",
                                      "--log-level", "info"], ["l.json"]),
    "visualizer underscores": ("visualizer", ["--input_filename", "{et}", "--output_filename",
                                              "g.dot"], ["g.dot"]),
    # ours
    "timeline_visualizer hyphens": (
        "timeline_visualizer", ["--input", "{astra_log}", "--output", "t.json", "--num-npus",
                                "2", "--npu-frequency", "1", "--log-filename", "t.log"],
        ["t.json", "t.log"]),
    "generator hyphens": (
        "generator", ["--num-npus", "2", "--default-runtime", "5", "--default-tensor-size",
                      "1024", "--default-comm-size", "65536", "--output-dir", "."],
        ["ALL_REDUCE.1.et"]),
    "trace_link hyphens": ("trace_link", ["--host-trace", "{host}", "--device-trace",
                                          "{kineto}", "--output-file", "l.json"], ["l.json"]),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(REFERENCE_RUNS))
def test_every_spelling_runs(
    cli: Runner, traces: Traces, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    tool, template, written = REFERENCE_RUNS[case]
    monkeypatch.chdir(tmp_path)
    paths = {name: str(getattr(traces, name)) for name in traces.__dataclass_fields__}
    outcome = cli(tool, *(arg.format(**paths) for arg in template))
    assert outcome.status == 0, outcome.errors
    assert [name for name in written if not (tmp_path / name).is_file()] == []
