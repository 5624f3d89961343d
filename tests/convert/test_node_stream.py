"""The converter's nodes from any position (:mod:`chakra.convert.node_stream`) and the
``.et`` written by two processes: any cut of the node stream joins back into the whole, and
two processes write the bytes one does (plain and gzip), on a real gloo recording (an
outline trace, with later segments and idle nodes) and on nodes held whole; an error in the
second process fails the conversion with its one line and leaves no file."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra.cli import converter as converter_cli
from chakra.convert import ConvertOptions, convert_file, load_et_plus, node_stream
from chakra.convert import converter as converter_module
from chakra.convert.classify import reads_payload
from chakra.convert.et_plus_input import with_payloads
from chakra.convert.node_stream import node_count, serialized_nodes
from chakra.errors import EtFormatError, TraceFormatError
from chakra.synth import SynthOptions, generate_job
from tests.convert.test_outline import GLOO, linked


@pytest.fixture(scope="module", params=["gloo", "synthetic"])
def et_plus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real gloo rank's ET+ (later segments, an [end] node), or a synthetic rank's
    (later segments, idle and delay nodes)."""
    folder = tmp_path_factory.mktemp("node_stream")
    if request.param == "gloo":
        return linked(folder, GLOO / "rank0.host_et.json.gz", GLOO / "rank0.kineto.json.gz")
    summary = generate_job(SynthOptions(seed=3, ranks=2, steps=2, ops_per_step=30), folder)
    return linked(folder, summary.ranks[0].host_et, summary.ranks[0].kineto)


@pytest.mark.parametrize("whole", [False, True])
def test_any_cut_of_the_node_stream_joins_back_into_the_whole(et_plus: Path, whole: bool) -> None:
    trace = load_et_plus(et_plus, keep_whole=None if whole else reads_payload)
    assert trace.outline is not whole
    plan, _ = converter_module._planned(trace, ConvertOptions())
    every = list(serialized_nodes(trace, plan))
    assert len(every) == node_count(trace, plan)
    main, extra, idle = len(trace.nodes), len(plan.segments.extra), len(plan.idle)
    assert extra and (idle or plan.end)  # sections beyond the ET+ nodes are cut too
    for cut in {0, 1, main - 1, main, main + extra, main + extra + idle,
                main + extra + idle + len(plan.delays), len(every) - 1, len(every)}:  # fmt: skip
        assert [*serialized_nodes(trace, plan, 0, cut), *serialized_nodes(trace, plan, cut)] \
            == every, cut  # fmt: skip
    assert list(serialized_nodes(trace, plan, 3, 9)) == every[3:9]


@pytest.mark.parametrize("name", ["two.et", "two.et.gz"])
def test_two_processes_write_the_bytes_one_does(
    et_plus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    one, two = tmp_path / name.replace("two", "one"), tmp_path / name
    convert_file(et_plus, one, processes=1)
    for share in (0.01, 0.35, 0.99):  # the cut in the ET+ nodes, or past them
        monkeypatch.setattr(node_stream, "FIRST_SHARE", share)
        convert_file(et_plus, two, processes=2)
        assert two.read_bytes() == one.read_bytes(), share


def test_an_error_in_the_second_process_fails_the_conversion(
    et_plus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(node_stream, "segment_node", lambda *args: b"")  # the fork inherits it
    with pytest.raises(EtFormatError, match=r"cannot write node #\d+: it"):
        convert_file(et_plus, tmp_path / "out.et", processes=2)
    assert list(tmp_path.iterdir()) == []


def test_the_reread_from_a_node_on_still_tells_a_changed_file(
    et_plus: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy.json"
    copy.write_bytes(et_plus.read_bytes())
    trace = load_et_plus(copy, keep_whole=reads_payload)
    skip = len(trace.nodes) - 2
    assert [node.id for node, _ in with_payloads(trace, skip)] == [
        node.id for node in trace.nodes[skip:]
    ]
    lines = copy.read_bytes().splitlines(keepends=True)
    last_node = lines[-2].rstrip(b"\n")  # the closing line is last
    copy.write_bytes(b"".join([*lines[:-2], last_node + b",\n", last_node + b"\n", lines[-1]]))
    with pytest.raises(TraceFormatError, match="more nodes than when it was first read"):
        list(with_payloads(trace, skip))


def test_the_command_line_takes_one_process_or_two(
    et_plus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = []
    for jobs in ([], ["-j", "1"], ["--jobs", "2"]):
        out = tmp_path / f"out{len(outputs)}.et"
        with pytest.raises(SystemExit) as done:
            converter_cli.main(["PyTorch", "--input", str(et_plus), "--output", str(out), *jobs])
        assert done.value.code in (0, None)
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] == outputs[2]
    with pytest.raises(SystemExit) as refused:
        converter_cli.main(["PyTorch", "--input", str(et_plus), "--output", "x.et", "-j", "3"])
    assert refused.value.code == 2
    assert "argument -j/--jobs: must be an integer from 1 to 2, not '3'" in capsys.readouterr().err
