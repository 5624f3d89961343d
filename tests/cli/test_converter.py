"""``chakra_converter`` end to end: both reference interfaces, help, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from chakra.et import read_et
from chakra.link.batch import link_files
from chakra.link.linked_trace import LinkOptions
from chakra.synth import SynthOptions, generate_job


def converter(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "chakra.cli.converter", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def et_plus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("conv")
    summary = generate_job(SynthOptions(seed=2, ranks=1, ops_per_step=70), folder)
    out = folder / "rank0.et_plus.json"
    link_files(summary.ranks[0].host_et, summary.ranks[0].kineto, out, LinkOptions())
    return out


def test_both_interfaces_write_the_same_file(et_plus: Path, tmp_path: Path) -> None:
    head, old = tmp_path / "head.et", tmp_path / "old.et"
    log = tmp_path / "conv.log"
    result = converter("--log-filename", str(log), "PyTorch", "--input", str(et_plus),
                       "--output", str(head))  # fmt: skip
    assert result.returncode == 0, result.stderr
    result = converter("--input_type", "PyTorch", "--input_filename", str(et_plus),
                       "--output_filename", str(old))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert head.read_bytes() == old.read_bytes()
    metadata, nodes = read_et(head)
    assert {a.name for a in metadata.attr} >= {"schema", "pid", "time", "start_ts", "finish_ts",
                                               "producer", "producer_version"}  # fmt: skip
    assert nodes and "wrote" in log.read_text()


@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
def test_log_options_on_either_side_of_the_subcommand(
    et_plus: Path, tmp_path: Path, after: bool
) -> None:
    """``--log-level``/``--log-filename`` before ``PyTorch`` (the reference's place) or after
    it (where the other tools take them): both work, and a level given before is not reset
    by the subcommand (at the default level, stderr and the log say "wrote ...")."""
    log = tmp_path / "conv.log"
    options = ["--log-level", "ERROR", "--log-filename", str(log)]
    paths = ["--input", str(et_plus), "--output", str(tmp_path / "o.et")]
    args = ["PyTorch", *paths, *options] if after else [*options, "PyTorch", *paths]
    result = converter(*args)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and log.read_text() == ""


def test_validate_flag(et_plus: Path, tmp_path: Path) -> None:
    result = converter("PyTorch", "--input", str(et_plus), "--output", str(tmp_path / "v.et"),
                       "--validate")  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_no_arguments_prints_help_as_a_usage_error() -> None:
    result = converter()
    assert result.returncode == 2 and "PyTorch" in result.stderr and not result.stdout
    assert result.stderr.splitlines()[-1] == (
        "chakra_converter: error: choose a conversion: PyTorch or Text"
    )


def test_unreadable_workload_is_one_line() -> None:
    result = converter("Text", "--input", "missing_w.txt", "--output", "o", "--num-npus", "2",
                       "--num-passes", "1")  # fmt: skip
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("chakra_converter: error: cannot read missing_w.txt")


@pytest.mark.parametrize(
    ("args", "expected"),
    [(["--input_type", "Text", "--input_filename", "w", "--output_filename", "o"],
      "Text conversion needs --num-npus and --num-passes"),
     (["--input_type", "PyTorch"], "missing --input/--output"),
     (["--input_type", "Caffe", "--input_filename", "a", "--output_filename", "b"],
      "choose a conversion: PyTorch or Text")],
)  # fmt: skip
def test_usage_errors_exit_2_after_the_usage_line(args: list, expected: str) -> None:
    result = converter(*args)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith("usage: chakra_converter") and "Traceback" not in result.stderr
    assert lines[-1].startswith(f"chakra_converter: error: {expected}")


def test_simulate_prints_simulated_and_measured_makespans(et_plus: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.et"
    result = converter("PyTorch", "--input", str(et_plus), "--output", str(out), "--simulate")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("simulated makespan ") and "measured" in result.stdout
    assert out.exists()


BAD = {
    "kineto.json": ({"traceEvents": []}, "no recognised Kineto events (the trace has no events)"),
    "empty_nodes.json": ({"schema": "1.0.1", "nodes": []}, "holds no nodes"),
    "repeat.json": ({"schema": "s", "nodes": [{"id": 1, "name": "a", "ts": 1},
                                              {"id": 1, "name": "b", "ts": 2}]},
                    "1 node ids repeat"),
    "bad_type.json": ({"schema": "s", "nodes": [{"id": "x", "name": "a"}]},
                      "Expected `int`, got `str` (at nodes[0].id)"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_one_line_no_output(tmp_path: Path, name: str) -> None:
    document, expected = BAD[name]
    source, out = tmp_path / name, tmp_path / "out.et"
    source.write_text(json.dumps(document))
    result = converter("PyTorch", "--input", str(source), "--output", str(out))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert str(source) in lines[0] and expected in lines[0]
    assert not out.exists()


def test_ranks_converted_one_at_a_time_share_one_comm_group_file(tmp_path: Path) -> None:
    """Each rank's converter run adds the groups its trace names to PREFIX.comm_groups.json;
    a file there that is not a group table is a one-line error and nothing is added."""
    summary = generate_job(SynthOptions(seed=2, ranks=4, ops_per_step=70), tmp_path / "job")
    for rank in (0, 2):
        files = summary.ranks[rank]
        et_plus = tmp_path / f"rank{rank}.et_plus.json"
        link_files(files.host_et, files.kineto, et_plus, LinkOptions())
        result = converter("PyTorch", "--input", str(et_plus),
                           "--output", str(tmp_path / f"job.{rank}.et"))  # fmt: skip
        assert result.returncode == 0, result.stderr
    # rank 0 names the world and its pair (0, 1); rank 2 the world and its pair (2, 3)
    groups = json.loads((tmp_path / "job.comm_groups.json").read_text())
    assert groups == {"1": [0, 1, 2, 3], "2": [0, 1], "3": [2, 3]}
    (tmp_path / "job.comm_groups.json").write_text("[1, 2]")
    result = converter("PyTorch", "--input", str(tmp_path / "rank0.et_plus.json"),
                       "--output", str(tmp_path / "job.0.et"))  # fmt: skip
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert result.stderr.strip().endswith(
        'job.comm_groups.json: not a comm-group JSON file ({"<pg_name>": [ranks]})'
    )
    assert (tmp_path / "job.comm_groups.json").read_text() == "[1, 2]"


GLOO_HOST = (
    Path(__file__).parents[1] / "data" / "pytorch213" / "gloo_2rank" / "rank0.host_et.json.gz"
)


def test_send_recv_without_known_peer_is_refused(tmp_path: Path) -> None:
    """Without --rank the ends of a send/recv are unknown: no valid .et can be written."""
    out = tmp_path / "g.et"
    result = converter("PyTorch", "--input", str(GLOO_HOST), "--output", str(out))
    assert result.returncode == 1 and not out.exists()
    line = result.stderr.strip().splitlines()[-1]  # after the conversion's warnings
    assert line.startswith(f"chakra_converter: error: {GLOO_HOST}: node ") and "--rank" in line
    result = converter("PyTorch", "--input", str(GLOO_HOST), "--output", str(out),
                       "--rank", "0", "--validate")  # fmt: skip
    assert result.returncode == 0 and out.exists(), result.stderr


def test_validate_failure_leaves_no_output(
    et_plus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--validate checks the finished temporary: a failure leaves no .et (nor the old one
    replaced)."""
    from chakra.cli import converter as cli
    from chakra.errors import ChakraError
    from chakra.et import graph_checks as validate

    out = tmp_path / "v.et"
    out.write_bytes(b"old")
    seen, original = [], validate.validate_et

    def failing(path: Any, *args: Any) -> Any:
        seen.append(Path(path))
        report = original(path)
        return msgspec.structs.replace(
            report, problems=(validate.Problem("made-up", 0, "made up"),)
        )

    monkeypatch.setattr(validate, "validate_et", failing)
    with pytest.raises(ChakraError, match="1 validation problems"):
        cli._convert(cli.build_parser().parse_args(
            ["PyTorch", "--input", str(et_plus), "--output", str(out), "--validate"]))  # fmt: skip
    assert seen and seen[0] != out and out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.et"]
