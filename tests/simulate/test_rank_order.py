"""Each file's rank comes from the file (its GlobalMetadata's ``rank``, written by the
converter, or its ``PREFIX.<r>.et`` name), never from the order of the arguments: a 12-rank
job given in a shell glob's order (0, 1, 10, 11, 2, ...) is labelled right; swapped names,
repeated ranks and gaps are refused with one line."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chakra.cli.sim import main as chakra_sim
from chakra.cli.validate import main as chakra_validate
from chakra.errors import RankOrderError
from chakra.et import EtReader, get_int_attr
from chakra.pipeline import RankFiles, run_pipeline
from chakra.ranks.rank_read import load_agreed
from chakra.simulate import SimOptions
from chakra.simulate.rank_order import (
    RankedFile,
    files_in_rank_order,
    name_rank,
    rank_order,
)
from chakra.simulate.run import simulate_files
from chakra.synth import SynthOptions, generate_job

RANKS = 12


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 12-rank synthetic job through the pipeline: ``workload.<r>.et`` for r in 0..11."""
    root = tmp_path_factory.mktemp("job12")
    traces = root / "traces"
    generate_job(SynthOptions(seed=5, ranks=RANKS, steps=1, ops_per_step=10), traces)
    files = [RankFiles(r, traces / f"rank{r}.host_et.json", traces / f"rank{r}.kineto.json")
             for r in range(RANKS)]  # fmt: skip
    run_pipeline(files, root / "out", plot=False, what_if=())
    return root / "out"


def glob_order(folder: Path) -> list[str]:
    """The files as ``chakra_sim folder/workload.*.et`` gets them: sorted as strings."""
    return sorted(str(p) for p in folder.glob("workload.*.et"))


def own_rank(path: str) -> int:
    with EtReader(path) as reader:
        rank = get_int_attr(reader.metadata, "rank")
    assert rank == name_rank(path)  # the converter wrote it; the name agrees
    return rank


def sim_json(paths: list[str], capsys: Any) -> dict:
    with pytest.raises(SystemExit) as exit_:
        chakra_sim([*paths, "--json"])
    assert exit_.value.code == 0
    return json.loads(capsys.readouterr().out)


def refused(main: Any, argv: list[str], capsys: Any) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code != 0
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def test_a_12_rank_job_in_glob_order_is_labelled_by_each_files_own_rank(
    job: Path, capsys: Any
) -> None:
    shuffled = glob_order(job)
    assert [name_rank(p) for p in shuffled][:4] == [0, 1, 10, 11]  # what the shell gives
    numeric = [str(job / f"workload.{r}.et") for r in range(RANKS)]
    by_glob = sim_json(shuffled, capsys)["ranks"]
    by_number = sim_json(numeric, capsys)["ranks"]
    assert [r["rank"] for r in by_glob] == list(range(RANKS))
    makespans = {r["rank"]: r["simulated_makespan_us"] for r in by_number}
    assert {r["rank"]: r["simulated_makespan_us"] for r in by_glob} == makespans
    assert files_in_rank_order(shuffled) == numeric
    assert [own_rank(p) for p in files_in_rank_order(shuffled)] == list(range(RANKS))
    result = simulate_files(shuffled, options=SimOptions(explain=False))
    assert [(g.rank, own_rank(g.source)) for g in result.graphs] == [(r, r) for r in range(RANKS)]
    graphs = load_agreed(shuffled)
    assert [own_rank(g.source) for g in graphs] == [g.rank for g in graphs]


def test_the_text_output_names_each_rank_with_its_file(job: Path, capsys: Any) -> None:
    with pytest.raises(SystemExit):
        chakra_sim(glob_order(job))
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("rank ")]
    assert lines[2].startswith(f"rank 2 ({job / 'workload.2.et'}): ")
    assert lines[10].startswith(f"rank 10 ({job / 'workload.10.et'}): ")


def test_swapped_names_are_refused(job: Path, tmp_path: Path, capsys: Any) -> None:
    shutil.copy(job / "workload.0.et", tmp_path / "job.1.et")  # rank 0's content
    shutil.copy(job / "workload.1.et", tmp_path / "job.0.et")
    swapped = [str(tmp_path / "job.1.et"), str(tmp_path / "job.0.et")]
    err = refused(chakra_sim, swapped, capsys)
    assert "job.1.et: its name says rank 1 but its metadata says rank 0" in err
    err = refused(chakra_validate, swapped, capsys)
    assert "its name says rank 1 but its metadata says rank 0" in err
    with pytest.raises(RankOrderError, match="its name says rank 1"):
        simulate_files(swapped)


def test_repeated_ranks_and_gaps_are_refused(job: Path, tmp_path: Path, capsys: Any) -> None:
    shutil.copy(job / "workload.1.et", tmp_path / "other.1.et")
    twice = [str(job / "workload.0.et"), str(job / "workload.1.et"), str(tmp_path / "other.1.et")]
    assert "are both rank 1" in refused(chakra_sim, twice, capsys)
    gap = [str(job / f"workload.{r}.et") for r in (0, 1, 3)]
    err = refused(chakra_sim, gap, capsys)
    assert "3 files given, ranks 0 to 3: rank 2 missing" in err
    with pytest.raises(RankOrderError, match="rank 2 missing"):
        load_agreed(gap)


def test_the_metadata_alone_gives_a_rank_when_the_name_does_not(
    job: Path, tmp_path: Path, capsys: Any
) -> None:
    shutil.copy(job / "workload.1.et", tmp_path / "second.et")
    # the metadata still says rank 1: the name carries none, the file does
    assert files_in_rank_order([tmp_path / "second.et", job / "workload.0.et"]) == [
        str(job / "workload.0.et"), str(tmp_path / "second.et")]  # fmt: skip


def test_files_that_carry_no_rank_follow_the_arguments_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bare = [RankedFile("b.et"), RankedFile("a.et"), RankedFile("c.et")]
    with caplog.at_level(logging.WARNING):
        assert rank_order(bare) == bare
    assert "ranks 0 to 2 follow the order of the arguments" in caplog.text
    mixed = [RankedFile("x.et"), RankedFile("w.0.et", name_rank=0)]
    with pytest.raises(RankOrderError, match=r"x\.et: no rank in its name .* while w\.0"):
        rank_order(mixed)


@pytest.mark.parametrize(
    ("name", "rank"),
    [("workload.3.et", 3), ("a.b.12.et.gz", 12), ("rank7.et_plus.json", 7),
     ("rank7.et_plus.json.gz", 7), ("rank0.et", None), ("workload.et", None),
     ("x.-1.et", None), ("rank2.host_et.json", None)],
)  # fmt: skip
def test_names_that_give_a_rank(name: str, rank: Any) -> None:
    assert name_rank(Path("/some/dir") / name) == rank


@st.composite
def jobs(draw: st.DrawFn) -> list[RankedFile]:
    """N files, ranks 0 to N-1 each given by name, by metadata or by both (agreeing)."""
    count = draw(st.integers(1, 16))
    how = draw(st.lists(st.sampled_from(["name", "metadata", "both"]), min_size=count,
                        max_size=count))  # fmt: skip
    return [
        RankedFile(f"job.{r}.et" if way != "metadata" else f"file{r}.et",
                   r if way != "metadata" else None, r if way != "name" else None)
        for r, way in enumerate(how)
    ]  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_permutation_of_a_job_gives_the_same_order(data: st.DataObject) -> None:
    files = data.draw(jobs())
    shuffled = data.draw(st.permutations(files))
    assert rank_order(shuffled) == files


def test_the_analyses_take_ranks_from_the_files_too(job: Path, tmp_path: Path, capsys: Any) -> None:
    from chakra.analysis.runs import run_files
    from chakra.cli.diff import main as chakra_diff

    numeric = [str(job / f"workload.{r}.et") for r in range(RANKS)]
    assert run_files(glob_order(job)).graphs == numeric  # what Analysis(paths) reads
    bare = tmp_path / "bare"  # a folder of .et files, no report.json
    bare.mkdir()
    for r in (0, 1, 3):
        shutil.copy(job / f"workload.{r}.et", bare / f"workload.{r}.et")
    assert "rank 2 missing" in refused(chakra_diff, [str(bare), str(job)], capsys)
    shutil.copy(job / "workload.3.et", bare / "workload.2.et")  # rank 3's content
    assert "its name says rank 2 but its metadata says rank 3" in refused(
        chakra_diff, [str(bare), str(job)], capsys
    )
