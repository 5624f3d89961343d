"""What every tool does alike: one line naming the kind of a wrong input, status 2 for usage
errors, no traceback on a closed pipe, help for every option, the shared flag spellings."""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chakra.convert import ConvertOptions, convert_file
from chakra.link.batch import link_files
from chakra.link.linked_trace import LinkOptions
from chakra.synth import SynthOptions, generate_job

TOOLS = ("converter", "generator", "jsonizer", "pipeline", "sim", "synth",
         "timeline_visualizer", "trace_info", "trace_link", "validate", "visualizer")  # fmt: skip
KIND_NAMES = {"host": "a host execution trace", "kineto": "a Kineto trace",
              "et_plus": "an ET+ (linked trace)", "et": "a Chakra ET"}  # fmt: skip


def tool(name: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"chakra.cli.{name}", *args],
                          capture_output=True, text=True, check=False, **kwargs)  # fmt: skip


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One small file of each kind: host ET, Kineto trace, ET+ and Chakra ET."""
    folder = tmp_path_factory.mktemp("kinds")
    rank = generate_job(SynthOptions(seed=1, ranks=1, steps=1, ops_per_step=70), folder).ranks[0]
    et_plus, et = folder / "rank0.et_plus.json", folder / "rank0.et"
    link_files(rank.host_et, rank.kineto, et_plus, LinkOptions())
    convert_file(et_plus, et, ConvertOptions())
    return {"host": Path(rank.host_et), "kineto": Path(rank.kineto), "et_plus": et_plus, "et": et}


# (tool, the arguments around {input}, {out}: what it would write, the kinds it refuses)
WRONG_KINDS = [
    ("trace_link", ["--chakra-host-trace", "{input}", "--chakra-device-trace", "{kineto}",
                    "--output-file", "{out}"], ["kineto", "et"]),
    ("trace_link", ["--chakra-host-trace", "{host}", "--chakra-device-trace", "{input}",
                    "--output-file", "{out}"], ["host", "et_plus", "et"]),
    # a Kineto trace alone is an input of the converter (issue 33): linked in memory
    ("converter", ["PyTorch", "--input", "{input}", "--output", "{out}"], ["et"]),
    ("sim", ["{input}", "--timeline", "{out}"], ["kineto"]),
    ("jsonizer", ["--input_filename", "{input}", "--output_filename", "{out}"],
     ["host", "kineto", "et_plus"]),
    ("validate", ["{input}"], ["host", "kineto", "et_plus"]),
    ("visualizer", ["--input_filename", "{input}", "--output_filename", "{out}"],
     ["host", "kineto", "et_plus"]),
    ("pipeline", ["--host-trace", "{input}", "--device-trace", "{kineto}", "--output-dir",
                  "{out}"], ["kineto", "et"]),
    ("pipeline", ["--host-trace", "{host}", "--device-trace", "{input}", "--output-dir",
                  "{out}"], ["host", "et_plus", "et"]),
]  # fmt: skip
CASES = [(name, args, kind) for name, args, kinds in WRONG_KINDS for kind in kinds]


@pytest.mark.parametrize(("name", "template", "kind"), CASES,
                         ids=[f"{c[0]}-{c[1].index('{input}')}-{c[2]}" for c in CASES])  # fmt: skip
@pytest.mark.slow
def test_wrong_kind_of_input_is_one_line(
    inputs: dict[str, Path], tmp_path: Path, name: str, template: list[str], kind: str
) -> None:
    out = tmp_path / "out"
    fill = {"input": str(inputs[kind]), "out": str(out), **{k: str(v) for k, v in inputs.items()}}
    result = tool(name, *(arg.format(**fill) for arg in template))
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [result.stderr.strip()], result.stderr
    expected = f"chakra_{name}: error: {inputs[kind]}: this is {KIND_NAMES[kind]}; chakra_{name}"
    assert result.stderr.startswith(expected), result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("name", "args"),
    [("converter", []), ("converter", ["--input_type", "Text", "--input_filename", "w"]),
     ("trace_link", []), ("pipeline", ["--output-dir", "x"]), ("pipeline", []), ("sim", []),
     ("synth", []), ("jsonizer", []), ("validate", []), ("visualizer", []),
     ("trace_info", []), ("timeline_visualizer", ["--input_filename", "a", "--output_filename",
                                                  "b"])],
)  # fmt: skip
@pytest.mark.slow
def test_missing_arguments_exit_2(tmp_path: Path, name: str, args: list[str]) -> None:
    result = tool(name, *args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1].startswith(f"chakra_{name}: error: ")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("name", ["sim", "trace_info", "validate", "trace_link"])
def test_closed_pipe_ends_quietly(inputs: dict[str, Path], tmp_path: Path, name: str) -> None:
    args = {
        "sim": [str(inputs["et"])],
        "trace_info": [str(inputs["et"])] * 3,
        "validate": [str(inputs["et"])],
        "trace_link": [
            "--host-trace",
            str(inputs["host"]),
            "--device-trace",
            str(inputs["kineto"]),
            "--output-file",
            str(tmp_path / "o.json"),
        ],
    }
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the tool writes its first line
    try:
        result = subprocess.run([sys.executable, "-m", f"chakra.cli.{name}", *args[name]],
                                stdout=write_end, stderr=subprocess.PIPE, text=True,
                                check=False)  # fmt: skip
    finally:
        os.close(write_end)
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr  # the reader leaving is no error (issue 32)
    if name == "trace_link":  # the work was done
        assert (tmp_path / "o.json").is_file()


def _all_actions(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _all_actions(sub)
        elif action.option_strings or action.nargs:
            yield parser.prog, action


@pytest.mark.parametrize("name", TOOLS)
def test_every_option_has_help(name: str) -> None:
    parser = importlib.import_module(f"chakra.cli.{name}").build_parser()
    bare = [(prog, action.option_strings or action.dest) for prog, action in _all_actions(parser)
            if not action.help]  # fmt: skip
    assert not bare


def test_shared_spellings() -> None:
    synth = importlib.import_module("chakra.cli.synth").build_parser()
    assert synth.parse_args(["--output-dir", "d"]).output_dir == "d"
    assert synth.parse_args(["--out-dir", "d"]).output_dir == "d"
    pipeline = importlib.import_module("chakra.cli.pipeline").build_parser()
    for host, device in (("--chakra-host-trace", "--chakra-device-trace"),
                         ("--pytorch-et-file", "--kineto-file")):  # fmt: skip
        args = pipeline.parse_args([host, "h.json", device, "k.json", "--output-dir", "o"])
        assert (str(args.host_trace), str(args.device_trace)) == ("h.json", "k.json")
    link = importlib.import_module("chakra.cli.trace_link").build_parser()
    args = link.parse_args(["--host-trace", "h", "--device-trace", "k"])
    assert (args.host_trace, args.device_trace) == ("h", "k")


@pytest.mark.slow
def test_sim_hints_at_a_network_for_untimed_collectives(tmp_path: Path) -> None:
    from chakra.text import convert_text

    workload = Path(__file__).resolve().parents[1] / "data" / "text_workloads" / "DATA.txt"
    files = [str(p) for p in convert_text(workload, tmp_path / "data", 2, 1)]
    hint = "time them with --network ring:GBPS:LATENCY_US (e.g. ring:100:5) or --resources"
    plain = tool("sim", *files)
    assert plain.returncode == 0 and hint in plain.stderr, plain.stderr
    for options in (["--network", "ring:100:5"], ["--resources", "astra-sim"]):
        timed = tool("sim", *files, *options)
        assert timed.returncode == 0 and hint not in timed.stderr, timed.stderr
