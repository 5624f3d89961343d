"""The graph cache: a file loaded again comes from the cache, equal field by field to a
fresh load, with the same ``chakra_sim`` output; anything the graph depends on (a byte of
the file, the load options) misses; a damaged, foreign or tampered entry, or a folder that
cannot be written, only means reading the file; a load that warned is never stored."""

from __future__ import annotations

import json
import logging
import os
import pickle
import shutil
from array import array
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import pytest

import chakra.simulate.run as run
from chakra.cli.sim import main as chakra_sim
from chakra.et import GlobalMetadata, Node, NodeType, set_attr, write_et
from chakra.pipeline import RankFiles, run_pipeline
from chakra.simulate import LoadOptions
from chakra.simulate.astra_graph import P2PKey
from chakra.simulate.graph_build import build_graph
from chakra.simulate.graph_cache import cache_dir
from chakra.simulate.node_files import read_nodes
from chakra.simulate.run import load_astra_graph, load_graph
from chakra.simulate.sim_graph import SimGraph
from chakra.synth import SynthOptions, generate_job

RANKS = 2

#: what chakra_sim loads with (the library's default stores nothing)
CACHED = LoadOptions(cache=True)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A 2-rank synthetic job through the pipeline: ``workload.<r>.et``."""
    root = tmp_path_factory.mktemp("cachejob")
    traces = root / "traces"
    generate_job(SynthOptions(seed=3, ranks=RANKS, steps=1, ops_per_step=40), traces)
    files = [RankFiles(r, traces / f"rank{r}.host_et.json", traces / f"rank{r}.kineto.json")
             for r in range(RANKS)]  # fmt: skip
    run_pipeline(files, root / "out", plot=False, what_if=())
    return [root / "out" / f"workload.{r}.et" for r in range(RANKS)]


class CountedReads:
    """Counts the files :mod:`chakra.simulate.run` reads (a hit reads none)."""

    def __init__(self, monkeypatch: Any) -> None:
        self.count = 0
        original = run.read_nodes

        def counted(*args: Any) -> Any:
            self.count += 1
            return original(*args)

        monkeypatch.setattr(run, "read_nodes", counted)


@pytest.fixture
def reads(monkeypatch: Any) -> CountedReads:
    return CountedReads(monkeypatch)


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.graph"))


def assert_same_graph(got: SimGraph, want: SimGraph) -> None:
    """Every field equal, and of the same type (arrays of the same typecode, keys of the
    same class)."""
    for field in SimGraph.__struct_fields__:
        mine, theirs = getattr(got, field), getattr(want, field)
        assert type(mine) is type(theirs), field
        assert mine == theirs, field
        if hasattr(theirs, "typecode"):
            assert mine.typecode == theirs.typecode, field
    assert [type(k) for k in got.comm.values()] == [type(k) for k in want.comm.values()]
    assert list(got.comm) == list(want.comm)


def fresh(path: Path, rank: int, **options: Any) -> SimGraph:
    """The graph of ``path`` read anew, as :func:`load_graph` reads it (uncounted)."""
    load = LoadOptions(cache=False, **options)
    graph = read_nodes(path, rank, partial(build_graph, options=load, source=str(path)))
    return msgspec.structs.replace(graph, source=str(path))


def test_the_environment_names_the_folder(monkeypatch: Any, tmp_path: Path) -> None:
    """Tests never write to ~/.cache (the conftest's folder); ``off`` disables it; without
    ``CHAKRA_CACHE_DIR``, XDG's folder or ~/.cache."""
    assert Path.home() / ".cache" not in cache_dir().parents
    monkeypatch.setenv("CHAKRA_CACHE_DIR", "off")
    assert cache_dir() is None
    monkeypatch.delenv("CHAKRA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "chakra" / "graphs"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path.home() / ".cache" / "chakra" / "graphs"


def test_a_second_load_is_a_hit_equal_to_a_fresh_load(
    job: list[Path], reads: CountedReads, graph_cache_dir: Path, tmp_path: Path
) -> None:
    """The second load reads no file and gives the graph a fresh load gives, field by
    field; its ``source`` is the path given this time, not the one stored."""
    for rank, path in enumerate(job):
        load_graph(path, rank, options=CACHED)
    assert reads.count == RANKS and len(entries(graph_cache_dir)) == RANKS
    moved = shutil.copy(job[1], tmp_path / "elsewhere.et")
    hits = [load_graph(job[0], 0, options=CACHED), load_graph(moved, 1, options=CACHED)]
    assert reads.count == RANKS
    assert_same_graph(hits[0], fresh(job[0], 0))
    assert_same_graph(hits[1], fresh(moved, 1))
    assert hits[1].source == str(moved)


def test_astra_graphs_keep_their_pair_keys(tmp_path: Path, reads: CountedReads) -> None:
    """ASTRA-sim's graphs hold :class:`P2PKey` s (a subclass of CommKey): a hit gives them
    back as such, and a graph and an ASTRA-sim graph of one file are two entries."""
    nodes = [_comm(1, NodeType.COMM_SEND_NODE, comm_dst=1), _comm(2, NodeType.COMM_COLL_NODE)]
    path = tmp_path / "p2p.0.et"
    write_et(path, GlobalMetadata(version="0.0.4"), nodes)
    first = load_astra_graph(path, 0, CACHED)
    assert any(type(k) is P2PKey for k in first.comm.values())
    hit = load_astra_graph(path, 0, CACHED)
    assert reads.count == 1
    assert_same_graph(hit, load_astra_graph(path, 0, LoadOptions(cache=False)))
    load_graph(path, 0, options=CACHED)
    assert reads.count == 3


def _comm(node_id: int, node_type: int, **attrs: int) -> Any:
    node = Node(id=node_id, name=f"comm{node_id}", type=node_type, duration_micros=3)
    for name, value in {"comm_type": 0, "comm_size": 64, "comm_tag": 5, **attrs}.items():
        set_attr(node, name, value)
    set_attr(node, "is_cpu_op", False)
    set_attr(node, "stream", 7)
    return node


def sim_output(capsys: Any, *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        chakra_sim(list(argv))
    assert exit_.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("extra", [(), ("--json",), ("--resources", "astra-sim")])
def test_chakra_sim_prints_the_same_from_the_cache(
    job: list[Path], capsys: Any, graph_cache_dir: Path, extra: tuple
) -> None:
    """Read anew (``--no-cache``), stored (cold), from the cache (warm): one output."""
    paths = [str(p) for p in job]
    uncached = sim_output(capsys, *paths, *extra, "--no-cache")
    assert entries(graph_cache_dir) == []
    cold = sim_output(capsys, *paths, *extra)
    assert len(entries(graph_cache_dir)) == RANKS
    warm = sim_output(capsys, *paths, *extra)
    assert uncached == cold == warm
    if "--json" in extra:
        assert json.loads(warm)["ranks"]


def test_a_changed_byte_misses(job: list[Path], tmp_path: Path, reads: CountedReads) -> None:
    path = Path(shutil.copy(job[0], tmp_path / "workload.0.et"))
    before = load_graph(path, 0, options=CACHED)
    data = path.read_bytes()
    name = before.names[-1].encode()
    at = data.rindex(name)
    path.write_bytes(data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :])
    after = load_graph(path, 0, options=CACHED)
    assert reads.count == 2
    assert after.names[-1] != before.names[-1]
    assert_same_graph(after, fresh(path, 0))


@pytest.mark.parametrize(
    "options",
    [{"lenient": True}, {"serialize_gpu": True}, {"checks": None}],
    ids=["lenient", "serialize_gpu", "no_checks"],
)
def test_other_load_options_miss(
    job: list[Path], reads: CountedReads, graph_cache_dir: Path, options: dict
) -> None:
    load_graph(job[0], 0, options=CACHED)
    other = load_graph(job[0], 0, options=LoadOptions(cache=True, **options))
    assert reads.count == 2 and len(entries(graph_cache_dir)) == 2
    assert_same_graph(other, fresh(job[0], 0, **options))
    load_graph(job[0], 0, options=LoadOptions(cache=True, **options))
    assert reads.count == 2


DAMAGES = ["truncated", "garbage", "empty", "another_key", "pickle", "names_out_of_range",
           "names_of_another_kind"]  # fmt: skip


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_bad_entry_is_ignored_and_replaced(
    job: list[Path], reads: CountedReads, graph_cache_dir: Path, tmp_path: Path,
    damage: str, caplog: Any,
) -> None:  # fmt: skip
    """A truncated or garbled entry, one stored for another file, or one replaced by a
    pickle (whose loading would run code: it must not) is read past with a DEBUG line,
    and the next store replaces it."""
    load_graph(job[0], 0, options=CACHED)
    (other,) = entries(graph_cache_dir)
    another_key = other.read_bytes()
    other.unlink()
    load_graph(job[1], 1, options=CACHED)
    (entry,) = entries(graph_cache_dir)
    marker = tmp_path / "pickle-ran"
    good = entry.read_bytes()
    damaged = {
        "truncated": good[: len(good) // 2],
        "garbage": os.urandom(4096),
        "empty": b"",
        "another_key": another_key,
        "pickle": pickle.dumps(_Tamper(str(marker))),
        "names_out_of_range": _with_codes(good, 10**6),
        "names_of_another_kind": _with_codes(good, 0, "d"),
    }[damage]
    entry.write_bytes(damaged)
    with caplog.at_level(logging.DEBUG, logger="chakra.simulate.graph_cache"):
        graph = load_graph(job[1], 1, options=CACHED)
    assert reads.count == 3
    assert not marker.exists()
    assert_same_graph(graph, fresh(job[1], 1))
    assert entry.read_bytes() == good
    assert "graph cache: ignoring" in caplog.text
    load_graph(job[1], 1, options=CACHED)
    assert reads.count == 3


def _with_codes(entry: bytes, code: int, typecode: str = "q") -> bytes:
    """``entry`` (its key kept) with every node's name code ``code``: it decodes, but its
    names are not in its table."""
    fields = msgspec.msgpack.decode(entry)
    count = len(fields[3][1]) // 8
    fields[3] = [typecode, array(typecode, [code] * count).tobytes()]
    return msgspec.msgpack.encode(fields)


class _Tamper:
    """What a tampered entry could hold: unpickling it creates ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (Path.touch, (Path(self.path),))


def test_a_folder_that_cannot_be_written_means_no_cache(
    job: list[Path], reads: CountedReads, tmp_path: Path, monkeypatch: Any
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("CHAKRA_CACHE_DIR", str(blocker / "graphs"))  # not a folder
    assert_same_graph(load_graph(job[0], 0, options=CACHED), fresh(job[0], 0))
    load_graph(job[0], 0, options=CACHED)
    assert reads.count == 2


def test_a_full_disk_leaves_no_partial_file(
    job: list[Path], reads: CountedReads, graph_cache_dir: Path, monkeypatch: Any
) -> None:
    def full(*args: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    assert_same_graph(load_graph(job[0], 0, options=CACHED), fresh(job[0], 0))
    assert list(graph_cache_dir.iterdir()) == []


def test_off_and_no_cache_store_nothing(
    job: list[Path], reads: CountedReads, graph_cache_dir: Path, monkeypatch: Any
) -> None:
    load_graph(job[0], 0, options=LoadOptions(cache=False))
    load_graph(job[0], 0)  # the library's default: no cache (the pipeline loads so)
    monkeypatch.setenv("CHAKRA_CACHE_DIR", "off")
    load_graph(job[0], 0, options=CACHED)
    load_graph(job[0], 0, options=CACHED)
    assert reads.count == 4 and list(graph_cache_dir.iterdir()) == []


def test_a_lenient_load_with_problems_warns_every_time(
    tmp_path: Path, reads: CountedReads, graph_cache_dir: Path, caplog: Any
) -> None:
    """Not stored: its warning is printed each time the file is simulated."""
    path = tmp_path / "dangling.0.et"
    node = Node(id=1, name="op", type=NodeType.COMP_NODE, duration_micros=5, data_deps=[9])
    write_et(path, GlobalMetadata(version="0.0.4"), [node])
    for _ in range(2):
        caplog.clear()
        load_graph(path, 0, options=LoadOptions(lenient=True, cache=True))
        assert "fails chakra_validate's checks (--lenient)" in caplog.text
    assert reads.count == 2 and entries(graph_cache_dir) == []


def test_a_load_whose_warnings_are_not_logged_is_not_stored(
    job: list[Path], reads: CountedReads, graph_cache_dir: Path
) -> None:
    """With warnings off (``--log-level ERROR``) a load cannot tell whether it warned."""
    chakra_logger = logging.getLogger("chakra")
    level = chakra_logger.level
    chakra_logger.setLevel(logging.ERROR)
    try:
        load_graph(job[0], 0, options=CACHED)
    finally:
        chakra_logger.setLevel(level)
    assert entries(graph_cache_dir) == []


def test_a_failed_load_is_not_stored(tmp_path: Path, graph_cache_dir: Path) -> None:
    path = tmp_path / "dangling.0.et"
    node = Node(id=1, name="op", type=NodeType.COMP_NODE, duration_micros=5, data_deps=[9])
    write_et(path, GlobalMetadata(version="0.0.4"), [node])
    for _ in range(2):
        with pytest.raises(Exception, match="dangling_data_dep"):
            load_graph(path, 0, options=CACHED)
    assert entries(graph_cache_dir) == []


def test_the_folder_keeps_within_its_size_bound(
    job: list[Path], graph_cache_dir: Path, monkeypatch: Any
) -> None:
    """Least recently used first: the entry used again stays, the other goes."""
    load_graph(job[0], 0, options=CACHED)
    (first,) = entries(graph_cache_dir)
    os.utime(first, (1, 1))  # long unused
    monkeypatch.setenv("CHAKRA_CACHE_MAX_BYTES", str(first.stat().st_size + 1))
    load_graph(job[1], 1, options=CACHED)
    assert len(entries(graph_cache_dir)) == 1 and not first.exists()
    assert msgspec.msgpack.decode(entries(graph_cache_dir)[0].read_bytes())
