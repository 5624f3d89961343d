"""Every ``.et`` family we write runs to completion in the real ASTRA-sim
(``../shared/tools/astra-sim/run.py``: every node of every rank issued, nothing swallowed),
with the congestion-unaware and -aware backends: the demo job, 1.0.1 traces named by
address, the PyTorch 2.13 recordings (single process, gloo) and a job with every collective
type and point-to-point. Group ids are checked against the truth by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chakra.convert import ConvertOptions, convert_file
from chakra.convert.astra_sim import comm_groups_path
from chakra.convert.group_file import add_comm_groups
from chakra.et import NodeType, get_int_attr, read_et, write_et
from chakra.pipeline import RankFiles, run_pipeline
from chakra.synth import SynthOptions, generate_job, options_with_vintages
from tests.conftest import REPO_ROOT, AstraSim, assert_astra_sim_ran_all

FIXTURES = REPO_ROOT / "tests" / "data" / "pytorch213"
BACKENDS = pytest.mark.parametrize("backend", [(), ("--aware",)], ids=["unaware", "aware"])


def pipeline_job(folder: Path, vintages: tuple = (), **synth: object) -> tuple[Path, Path]:
    """A synthetic job through chakra_pipeline: its ``.et`` prefix and comm-group file."""
    options = options_with_vintages(SynthOptions(**synth), vintages)  # type: ignore[arg-type]
    summary = generate_job(options, folder / "traces")
    ranks = [RankFiles(r.rank, r.host_et, r.kineto) for r in summary.ranks]
    result = run_pipeline(ranks, folder / "out", plot=False)
    assert result.comm_groups is not None and result.et_prefix is not None
    return Path(result.et_prefix), Path(result.comm_groups)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The bundled demo's job (Makefile: 4 ranks, seed 1, 200 ops per step)."""
    return pipeline_job(tmp_path_factory.mktemp("demo"), ranks=4, seed=1, ops_per_step=200)


@BACKENDS
def test_demo_runs_to_completion(astra_sim: AstraSim, demo: tuple, backend: tuple) -> None:
    prefix, groups = demo
    # the synthetic job's groups (synth/program.py): the world, then pairs of ranks;
    # ASTRA-sim ids are PyTorch's numbers + 1
    assert json.loads(groups.read_text()) == {"1": [0, 1, 2, 3], "2": [0, 1], "3": [2, 3]}
    verdict = astra_sim.run(prefix, "--comm-groups", str(groups), *backend)
    assert_astra_sim_ran_all(verdict)
    assert [r["nodes"] for r in verdict["ranks"]] == [
        len(read_et(f"{prefix}.{r}.et")[1]) for r in range(4)]  # fmt: skip


@BACKENDS
@pytest.mark.slow
def test_legacy_traces_named_by_address_run(
    astra_sim: AstraSim, tmp_path: Path, backend: tuple
) -> None:
    """1.0.1 traces: groups named by each rank's ProcessGroup address, send/recv ends
    known only from both ranks, a gloo worker thread."""
    prefix, groups = pipeline_job(tmp_path, ranks=4, seed=3, ops_per_step=80,
                                  vintages=("legacy_1_0_1",), worker_threads=True)  # fmt: skip
    verdict = astra_sim.run(prefix, "--comm-groups", str(groups), *backend)
    assert_astra_sim_ran_all(verdict)


@BACKENDS
@pytest.mark.slow
def test_pytorch_recordings_run(astra_sim: AstraSim, tmp_path: Path, backend: tuple) -> None:
    single = [RankFiles(0, FIXTURES / "single" / "host_et.json.gz",
                        FIXTURES / "single" / "kineto.json.gz")]  # fmt: skip
    folder = FIXTURES / "gloo_2rank"
    gloo = [RankFiles(r, folder / f"rank{r}.host_et.json.gz", folder / f"rank{r}.kineto.json.gz")
            for r in (0, 1)]  # fmt: skip
    for name, ranks in (("single", single), ("gloo", gloo)):
        result = run_pipeline(ranks, tmp_path / name, plot=False)
        groups = json.loads(Path(str(result.comm_groups)).read_text()) if result.comm_groups else {}
        prefix, groups_file = replicas(Path(str(result.et_prefix)), len(ranks), groups, 4)
        verdict = astra_sim.run(prefix, "--comm-groups", str(groups_file), *backend)
        assert_astra_sim_ran_all(verdict)


def replicas(prefix: Path, ranks: int, groups: dict, npus: int) -> tuple[Path, Path]:
    """``npus // ranks`` independent copies of a job, as one family of ``npus`` ranks: copy
    ``c`` has its ranks, ``comm_src``/``comm_dst`` shifted by ``c * ranks`` and its group
    ids by ``c * (largest id)``. ASTRA-sim's analytical Ring needs 2 NPUs or more, and its
    congestion-aware one asserts on 2 (Device::connect: both links join the same pair), so
    jobs of 1 or 2 ranks run as 4 NPUs; each copy runs exactly the nodes of the original."""
    top = max((int(g) for g in groups), default=0)
    table = {}
    for copy in range(npus // ranks):
        table.update({str(int(g) + copy * top): [r + copy * ranks for r in members]
                      for g, members in groups.items()})  # fmt: skip
        for rank in range(ranks):
            metadata, nodes = read_et(f"{prefix}.{rank}.et")
            for node in nodes:
                for attr in node.attr:
                    if attr.name == "pg_name":
                        attr.string_val = str(int(attr.string_val) + copy * top)
                    elif attr.name in ("comm_src", "comm_dst"):
                        attr.int32_val += copy * ranks
            write_et(f"{prefix}.copies.{copy * ranks + rank}.et", metadata, nodes)
    path = Path(f"{prefix}.copies.comm_groups.json")
    path.write_text(json.dumps(table))
    return Path(f"{prefix}.copies"), path


# Every collective PyTorch names, and send/recv: (Kineto's collective name, the type the
# shipped ASTRA-sim runs in its place, the original kept when it differs)
EVERY_KIND = [
    ("all_reduce", 0, None), ("reduce", 5, 1), ("all_gather", 2, None), ("gather", 5, 3),
    ("scatter", 5, 4), ("broadcast", 5, None), ("all_to_all", 6, None),
    ("reduce_scatter", 7, None), ("reduce_scatter_block", 7, 8), ("barrier", 0, 9),
    ("send", None, None), ("recv", None, None),
]  # fmt: skip


def every_kind_et_plus(path: Path, rank: int) -> Path:
    """Rank ``rank`` of a 4-rank job: one thread launching, in turn, one NCCL kernel of
    every kind on stream 7: collectives in group "0" (every rank), then a send and a recv
    between the ranks of each pair group ("1": ranks 0-1, "2": ranks 2-3), the even rank
    sending first."""
    nodes = [{"id": 1, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 1}]
    for i, (name, _, _) in enumerate(EVERY_KIND):
        group, members = "0", "[0, 1, 2, 3]"
        if name in ("send", "recv"):
            name = ("send", "recv")[(rank + (name == "recv")) % 2]
            pair = rank // 2
            group, members = str(1 + pair), str([2 * pair, 2 * pair + 1])
        host, kernel, ts = 10 + 2 * i, 11 + 2 * i, 100.0 * i
        attrs = [{"name": "tid", "type": "uint64", "value": 1}]
        nodes.append({"id": host, "name": f"c10d::{name}", "ctrl_deps": 1, "attrs": attrs,
                      "ts": ts, "inclusive_dur": 10, "exclusive_dur": 10})  # fmt: skip
        nodes.append({"id": kernel, "name": "ncclDevKernel_Generic", "ctrl_deps": host,
                      "cat": "kernel", "ph": "X", "ts": ts + 20, "dur": 30, "stream": 7,
                      "collective": {"name": name, "dtype": "Float", "in_msg_nelems": 256,
                                     "pg_name": group, "pg_ranks": members}})  # fmt: skip
    document = {"schema": "1.1.1-chakra.0.0.4", "pid": 1, "time": "t", "start_ts": 0,
                "finish_ts": 2000, "nodes": nodes}  # fmt: skip
    path.write_text(json.dumps(document))
    return path


@BACKENDS
def test_every_collective_type_and_point_to_point_run(
    astra_sim: AstraSim, tmp_path: Path, backend: tuple
) -> None:
    for rank in range(4):
        et = tmp_path / f"job.{rank}.et"
        report = convert_file(every_kind_et_plus(tmp_path / f"r{rank}.json", rank), et,
                              ConvertOptions(rank=rank))  # fmt: skip
        add_comm_groups(comm_groups_path(et), report.comm_groups)
        comm = [n for n in read_et(et)[1] if n.type != NodeType.COMP_NODE]
        assert len(comm) == len(EVERY_KIND)
        # the graph ends on a send/recv: ASTRA-sim would end its process there (it has CPU
        # nodes), so a 0 us [end] node follows them
        end = read_et(et)[1][-1]
        assert end.name == "[end]" and list(end.data_deps) == [comm[-1].id]
        assert end.duration_micros == 0
        for node, (name, comm_type, original) in zip(comm, EVERY_KIND):
            assert get_int_attr(node, "comm_type") == comm_type, name
            assert get_int_attr(node, "comm_type_original") == original, name
            if comm_type is None:  # the even rank sends to its pair first, then receives
                sends = (name == "send") == (rank % 2 == 0)
                assert node.type == (NodeType.COMM_SEND_NODE if sends else NodeType.COMM_RECV_NODE)
                peer = rank ^ 1
                src, dst = (rank, peer) if sends else (peer, rank)
                assert (get_int_attr(node, "comm_src"), get_int_attr(node, "comm_dst"),
                        get_int_attr(node, "comm_tag")) == (src, dst, 0)  # fmt: skip
        assert get_int_attr(comm[9], "comm_size") == 0  # the barrier moves no data
        notes = " ".join(report.warnings)
        assert "BARRIER written as ALL_REDUCE" in notes and "GATHER written as BROADCAST" in notes
    # ranks converted one at a time add their groups to one file (ids: PyTorch's + 1)
    assert json.loads((tmp_path / "job.comm_groups.json").read_text()) == {
        "1": [0, 1, 2, 3], "2": [0, 1], "3": [2, 3]}  # fmt: skip
    verdict = astra_sim.run(tmp_path / "job", "--comm-groups",
                            str(tmp_path / "job.comm_groups.json"), *backend)  # fmt: skip
    assert_astra_sim_ran_all(verdict)
