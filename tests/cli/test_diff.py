"""``chakra_diff``: two runs, or a run and its what-if; one line per bad input, status 0 for a
diff, 1 for a bad input, 2 for a bad command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chakra.cli.diff import main
from chakra.et import GlobalMetadata, write_et
from tests.simulate.test_engine import node


def write_run(folder: Path, kernel_us: int, ranks: int = 1) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        nodes = [node(1, 10), node(2, kernel_us, (1,), stream=7), node(3, 5, (2,))]
        write_et(folder / f"w.{rank}.et", GlobalMetadata(version="0.0.4"), nodes)
    return folder


def diff(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(info.value.code), out, err


def test_two_runs_show_the_slower_kernel_and_the_makespan(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    a, b = write_run(tmp_path / "a", 50, ranks=2), write_run(tmp_path / "b", 80, ranks=2)
    status, out, err = diff(capsys, str(a), str(b))
    assert (status, err) == (0, "")
    assert "rank   0  makespan                65 ->           95           +30" in out
    rows = [line.split() for line in out.splitlines() if line.endswith("  n2")]
    assert [row[:2] for row in rows] == [["0", "kernel"], ["1", "kernel"]]
    assert rows[0][2:5] == ["+30.0", "50.0", "80.0"]


def test_a_what_if_of_one_file_as_json(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    a = write_run(tmp_path / "a", 50) / "w.0.et"
    status, out, _ = diff(capsys, str(a), "--scale", "n2=0.5", "--json")
    found = json.loads(out)
    assert status == 0 and [c["name"] for c in found["names"]] == ["n2"]
    assert found["names"][0]["change_us"] == -25


@pytest.mark.parametrize(
    ("argv", "status", "expected"),
    [
        (["{a}"], 2, "give run B, or --scale rules"),
        (["{a}", "{a}", "--scale", "n2=0.5"], 2, "give run B, or --scale rules"),
        (["{a}", "--scale", "n2"], 2, "argument --scale:"),
        (["{a}", "{a}", "--top", "-1"], 2, "argument --top: -1 is negative"),
        (["{a}", "{missing}"], 1, "no such file or folder"),
        (["{a}", "{two}"], 1, "the runs have 1 and 2 ranks"),
        (["{empty}", "{a}"], 1, "neither a pipeline output folder"),
        (["{a}", "--scale", "nothing=2"], 1, "matches no node"),
    ],
)
def test_bad_input_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture, argv: list, status: int, expected: str
) -> None:
    paths = {"a": write_run(tmp_path / "a", 50), "two": write_run(tmp_path / "two", 50, 2),
             "missing": tmp_path / "nope", "empty": tmp_path}  # fmt: skip
    (tmp_path / "empty").mkdir(exist_ok=True)
    paths["empty"] = tmp_path / "empty"
    code, out, err = diff(capsys, *[arg.format(**paths) for arg in argv])
    assert code == status and out == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith("chakra_diff: error: ") and expected in last, err
    assert "Traceback" not in err
