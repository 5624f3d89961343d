"""A 1.0.1-era job (groups named by address) simulates with collectives meeting across ranks;
chakra_validate compares real groups; an orphan NCCL kernel is filled from its peers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from chakra.et import EtReader, EtWriter, NodeType, get_attr, set_attr
from chakra.pipeline import RankFiles, run_pipeline
from chakra.simulate.meeting import meetings
from chakra.simulate.run import load_graph
from chakra.synth import SynthOptions, generate_job
from chakra.synth.options import options_with_vintages
from tests.synth.conftest import load_json

COMM = (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)
BASE = SynthOptions(seed=5, ranks=4, steps=1, ops_per_step=70)


def job(folder: Path, vintages: list[str], strip_table: bool = False) -> list[RankFiles]:
    """A 4-rank job; ``strip_table`` drops ``## process_group:init ##`` from the host ETs
    (the legacy vintage writes none already, as PyTorch of the 1.0.1 era did not)."""
    summary = generate_job(options_with_vintages(BASE, vintages), folder)
    for rank in summary.ranks:
        if strip_table:
            document = json.loads(rank.host_et.read_text())
            document["nodes"] = [n for n in document["nodes"]
                                 if n["name"] != "## process_group:init ##"]  # fmt: skip
            rank.host_et.write_text(json.dumps(document))
    return [RankFiles(r.rank, r.host_et, r.kineto) for r in summary.ranks]


def comm_nodes(path: Path) -> list[Any]:
    with EtReader(path) as reader:
        return [n for n in reader if n.type in COMM]


def truth_groups(folder: Path, rank: int) -> list[str]:
    """The true group of each collective of ``rank``, in order of launch."""
    ops = load_json(folder / f"rank{rank}.truth.json")["gpu_ops"]
    return [op["collective"]["pg_name"] for op in sorted(ops, key=lambda o: o["correlation"])
            if op.get("collective")]  # fmt: skip


def test_legacy_job_meets_across_ranks_and_validates(tmp_path: Path) -> None:
    ranks = job(tmp_path / "legacy", ["legacy_1_0_1"], strip_table=True)
    result = run_pipeline(ranks, tmp_path / "out", plot=False)
    report = json.loads(result.report.read_text())
    # rank 2 and 3 named their pair group "1" like ranks 0 and 1: split by consecutive ranks
    # and each send/recv gets its ends (the 1.0.1 trace names no members): one pair a rank
    assert report["agreement"]["counts"] == {
        "groups split by consecutive ranks": 2,
        "send/recv ends filled from the group's two ranks": 4,
    }
    # ASTRA-sim group ids: the truth's group number + 1
    assert report["agreement"]["groups_compared"] == ["1", "2", "3"]
    assert report["agreement"]["disagreements"] == []
    for r in range(4):
        names = [get_attr(n, "pg_name") for n in comm_nodes(tmp_path / "out" / f"workload.{r}.et")]
        assert names == [str(int(name) + 1) for name in truth_groups(tmp_path / "legacy", r)]
        assert sorted(set(names)) == ["1", "2" if r < 2 else "3"]
        # the synthetic job's pairs: the even rank sends to the odd one, messages numbered
        p2p = [n for n in comm_nodes(tmp_path / "out" / f"workload.{r}.et")
               if n.type in (NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)]  # fmt: skip
        assert p2p and [
            (get_attr(n, "comm_src"), get_attr(n, "comm_dst"), get_attr(n, "comm_tag")) for n in p2p
        ] == [(r - r % 2, r - r % 2 + 1, k) for k in range(len(p2p))]
        assert all((n.type == NodeType.COMM_SEND_NODE) == (r % 2 == 0) for n in p2p)
    modern = run_pipeline(job(tmp_path / "modern", []), tmp_path / "modern_out", plot=False)
    for legacy_rank, modern_rank in zip(result.ranks, modern.ranks):
        simulated = legacy_rank.simulation.simulated_makespan_us
        measured = legacy_rank.simulation.measured_makespan_us
        assert abs(simulated - measured) <= 0.02 * measured
        assert abs(simulated - modern_rank.simulation.simulated_makespan_us) <= 0.02 * measured
    ets = [tmp_path / "out" / f"workload.{r}.et" for r in range(4)]
    # every collective meets its whole group (with per-rank addresses each would meet alone)
    table = meetings([load_graph(path, r) for r, path in enumerate(ets)])
    members = {key.pg_name: sorted(meeting.members) for key, meeting in table.items()}
    assert members == {"1": [0, 1, 2, 3], "2": [0, 1], "3": [2, 3]}
    ok = validate(*ets)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "process groups compared: 1, 2, 3" in ok.stdout
    # swap the types of rank 1's first two collectives of different types
    broken = tmp_path / "rank1.swapped.et"
    with EtReader(ets[1]) as reader, EtWriter(broken, reader.metadata) as writer:
        nodes = list(reader)
        colls = [n for n in nodes if n.type == NodeType.COMM_COLL_NODE]
        a = colls[0]
        b = next(n for n in colls if get_attr(n, "comm_type") != get_attr(a, "comm_type"))
        type_a, type_b = get_attr(a, "comm_type"), get_attr(b, "comm_type")
        set_attr(a, "comm_type", type_b)
        set_attr(b, "comm_type", type_a)
        writer.write_all(nodes)
    failed = validate(ets[0], broken, ets[2], ets[3])
    assert failed.returncode == 1
    assert "process groups differ across ranks" in failed.stderr
    assert f"rank 1: node {a.id}" in failed.stdout and f"comm_type {type_b}" in failed.stdout


def validate(*paths: Path) -> subprocess.CompletedProcess:
    script = [sys.executable, "-m", "chakra.cli.validate"]
    return subprocess.run([*script, *map(str, paths)], capture_output=True, text=True,
                          check=False)  # fmt: skip


def test_orphan_nccl_kernel_is_filled_from_its_peers(tmp_path: Path) -> None:
    """Rank 1's first collective kernel loses its launch and External id (so no host op)
    and, as in 2023 Kineto traces, carries no collective metadata, under a name that does
    not tell its type: converted, it is a guessed ALL_REDUCE of size 0 in no group."""
    ranks = job(tmp_path / "legacy", ["legacy_1_0_1"])
    document = json.loads(ranks[1].device.read_text())
    kernel = next(e for e in document["traceEvents"]
                  if e.get("cat") == "kernel" and "nccl" in e["name"].lower())  # fmt: skip
    assert "Collective name" not in kernel["args"]  # the legacy vintage writes none
    true_type = "broadcast" if "Broadcast" in kernel["name"] else kernel["name"]
    correlation = kernel["args"]["correlation"]
    kernel["name"] = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"
    kernel["args"] = {k: v for k, v in kernel["args"].items()
                      if k in ("device", "stream", "correlation")}  # fmt: skip
    document["traceEvents"] = [
        e for e in document["traceEvents"]
        if not (e.get("cat") == "cuda_runtime" and e["args"].get("correlation") == correlation)
    ]  # fmt: skip
    ranks[1].device.write_text(json.dumps(document))
    result = run_pipeline(ranks, tmp_path / "out", plot=False)
    agreement = json.loads(result.report.read_text())["agreement"]
    # no group table in 1.0.1: both 2-rank groups are numbered "1" and split by ranks
    assert agreement["counts"] == {"orphan groups filled from the stream": 1,
                                   "comm types filled from peers": 1,
                                   "comm sizes filled from peers": 1,
                                   "groups split by consecutive ranks": 2,
                                   "send/recv ends filled from the group's two ranks": 4,
                                   }  # fmt: skip
    # rank 1 for its orphan; ranks 2 and 3 for their pair group's new name "3"; every rank
    # for the ends of its send or recv
    assert agreement["disagreements"] == [] and agreement["ranks_rewritten"] == [0, 1, 2, 3]
    (orphan,) = [n for n in comm_nodes(tmp_path / "out" / "workload.1.et")
                 if "comm_type" in (get_attr(n, "comm_filled") or "")]  # fmt: skip
    assert orphan.name == kernel["name"] and orphan.start_time_micros == int(kernel["ts"])
    peer = comm_nodes(tmp_path / "out" / "workload.0.et")[0]
    assert true_type == "broadcast" and get_attr(peer, "comm_type") == 5  # BROADCAST
    assert get_attr(orphan, "comm_type") == 5 and get_attr(orphan, "comm_size") == 4096
    assert get_attr(orphan, "pg_name") == "1" and get_attr(peer, "pg_name") == "1"
    assert get_attr(orphan, "comm_filled") == "pg_name,comm_type,comm_size"
    assert get_attr(orphan, "comm_type_guessed") is None
