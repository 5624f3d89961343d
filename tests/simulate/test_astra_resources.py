"""``--resources astra-sim``: ASTRA-sim's resource model on hand-built graphs with times
worked out by hand, and the same model against the real ASTRA-sim (skipped without it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chakra.et import EtWriter, GlobalMetadata, Node, NodeType, set_attr
from chakra.simulate import SimResult, SimulationError, build_graph
from chakra.simulate.astra_events import AstraEngine
from chakra.simulate.astra_graph import build_astra_graph
from chakra.simulate.astra_network import AstraRing
from chakra.simulate.engine import Engine
from chakra.simulate.run import simulate_astra_files
from chakra.tools.generator import GeneratorOptions, generate
from tests.cli.test_sim import sim
from tests.conftest import assert_astra_sim_ran_all
from tests.convert.test_astra_sim import pipeline_job
from tests.et.custom_collective import write_ring_allreduce

ALL_REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL, REDUCE_SCATTER = 0, 2, 5, 6, 7
KINDS = {"comp": NodeType.COMP_NODE, "coll": NodeType.COMM_COLL_NODE,
         "send": NodeType.COMM_SEND_NODE, "recv": NodeType.COMM_RECV_NODE}  # fmt: skip


def make(node_id: int, kind: str = "comp", us: int = 0, deps: tuple = (), ctrl: tuple = (),
         cpu: bool = False, name: str = "", **attrs: Any) -> Any:  # fmt: skip
    """A node as ASTRA-sim reads it; ``attrs``: tid, stream, comm_* and pg_name."""
    out = Node(id=node_id, name=name or f"{kind}{node_id}", type=KINDS[kind],
               duration_micros=us, data_deps=list(deps), ctrl_deps=list(ctrl))  # fmt: skip
    set_attr(out, "is_cpu_op", cpu)
    for key, value in attrs.items():
        set_attr(out, key, value)  # in the kind the feeder reads (chakra_sim checks it)
    return out


def astra(*ranks: list, npus: int = 0) -> Engine:
    ring = AstraRing(50.0, 500.0, npus or len(ranks))
    engine = AstraEngine([build_astra_graph(nodes, r) for r, nodes in enumerate(ranks)], ring)
    engine.run()
    return engine


def default(*ranks: list) -> Engine:
    engine = Engine([build_graph(nodes, r) for r, nodes in enumerate(ranks)])
    engine.run()
    return engine


def spans(engine: Engine, rank: int = 0) -> dict[int, tuple[float, float]]:
    """Node id -> (start, end) in µs, rounded to the ns."""
    graph = engine.graphs[rank]
    return {graph.ids[i]: (round(engine.start[rank][i], 3), round(engine.end[rank][i], 3))
            for i in range(len(graph.ids))}  # fmt: skip


# --- the rules, by hand --------------------------------------------------------------------


def test_a_free_slot_takes_the_ready_node_with_the_smallest_id() -> None:
    # GPU kernels 2 (4 µs) and 5 (3 µs) are ready at 0; kernel 1 (2 µs) once CPU op 9 (1 µs)
    # ends. At 4 the GPU slot takes 1 before 5: the smallest ready id, not the first ready.
    nodes = [make(9, us=1, cpu=True), make(1, us=2, deps=(9,)), make(2, us=4), make(5, us=3)]
    assert spans(astra(nodes)) == {9: (0, 1), 1: (4, 6), 2: (0, 4), 5: (6, 9)}
    # our default model fixes the stream's order before the run (a topological order that
    # takes the smallest ready id: 2, 5, then 1 behind 9)
    assert spans(default(nodes)) == {9: (0, 1), 1: (7, 9), 2: (0, 4), 5: (4, 7)}


def test_a_node_made_ready_by_an_end_competes_with_those_ready_before() -> None:
    # at 3 kernel 4 ends and readies kernel 2; kernel 6 has waited since 1; 2 goes first
    nodes = [make(4, us=3), make(1, us=1, cpu=True), make(6, us=1, deps=(1,)),
             make(2, us=1, deps=(4,))]  # fmt: skip
    assert spans(astra(nodes)) == {4: (0, 3), 1: (0, 1), 6: (4, 5), 2: (3, 4)}


def test_one_cpu_one_gpu_and_one_comm_slot_per_rank() -> None:
    # two threads share the CPU slot, two streams the GPU slot; a broadcast (replayed) runs
    # on the comm slot beside them
    nodes = [make(1, us=10, cpu=True, tid=1), make(2, us=10, cpu=True, tid=2),
             make(3, us=5, stream=7), make(4, us=5, stream=8),
             make(5, "coll", us=2, comm_type=BROADCAST, comm_size=64)]  # fmt: skip
    assert spans(astra(nodes)) == {1: (0, 10), 2: (10, 20), 3: (0, 5), 4: (5, 10), 5: (0, 2)}
    threads_streams = spans(default(nodes))
    assert (threads_streams[2], threads_streams[4]) == ((0, 10), (0, 5))


def test_ctrl_deps_order_nodes_as_data_deps_do() -> None:
    nodes = [make(1, us=10), make(2, us=5, ctrl=(1,), cpu=True, tid=1)]
    assert spans(astra(nodes))[2] == (10, 15)
    assert spans(default(nodes))[2] == (0, 5)  # our model reads data_deps only


def test_delay_nodes_hold_the_cpu_slot() -> None:
    # our converter's [delay] holds nothing in our model; in ASTRA-sim's it is a CPU op
    nodes = [make(1, us=5, cpu=True, name="[delay]"), make(2, us=3, cpu=True, tid=1)]
    assert spans(astra(nodes)) == {1: (0, 5), 2: (5, 8)}
    assert spans(default(nodes)) == {1: (0, 5), 2: (0, 3)}


def test_a_node_of_no_duration_lasts_one_nanosecond() -> None:
    nodes = [make(1, us=0), make(2, us=2, deps=(1,))]
    assert spans(astra(nodes)) == {1: (0, 0.001), 2: (0.001, 2.001)}


def test_collective_members_end_at_their_own_times() -> None:
    # 1 MiB all-reduce over 4 ranks: 4 chunks of 256 KiB, each 6 ring steps of 64 KiB:
    # a step 500 ns + 65536 B / (50 * 2^30 / 10^9 B/ns) = 1,720 ns (truncated), 10 ns
    # after each receive and at each chunk's start, 3 x 40 ns of reduction after the first
    # 3 receives: 10 + 6 x (1720 + 10) + 3 x 120 = 10,750 ns a chunk, 43,000 ns in all.
    # Rank 0 comes 5 µs late: its neighbours wait for its messages as far as they need to.
    late = [make(1, us=5 if r == 0 else 0) for r in range(4)]
    ranks = [[late[r], make(2, "coll", deps=(1,), comm_type=ALL_REDUCE, comm_size=1 << 20)]
             for r in range(4)]  # fmt: skip
    engine = astra(*ranks)
    ends = [round(max(engine.end[r]) * 1000) for r in range(4)]
    assert ends == [48000, 43001, 44560, 46280]  # also what ASTRA-sim 518bd51 gives
    assert astra(*[[make(1, "coll", comm_type=ALL_REDUCE, comm_size=1 << 20)]] * 4).end[0][0] == 43


def test_ring_times() -> None:
    ring = AstraRing(50.0, 500.0, 4)
    assert ring.message_ns(0, 1, 1024) == 519  # 500 + 1024 / 53.687
    assert (ring.hops(0, 2), ring.hops(0, 3)) == (2, 1)  # bidirectional
    four = [0, 1, 2, 3]
    # all-gather: 4 chunks x (10 + 3 x (500 + 4882 + 10)) for 256 KiB messages
    assert ring.collective_ends_ns(ALL_GATHER, 1 << 20, four, [0] * 4) == [64744] * 4
    # reduce-scatter: every step reduces: 4 x (10 + 3 x (1720 + 10 + 120))
    assert ring.collective_ends_ns(REDUCE_SCATTER, 1 << 20, four, [0] * 4) == [22240] * 4
    # all-to-all: n(n-1)/2 = 6 steps, no reduction: 4 x (10 + 6 x 1730)
    assert ring.collective_ends_ns(ALL_TO_ALL, 1 << 20, four, [0] * 4) == [41560] * 4
    # ranks 0 and 2 are 2 hops apart: 4 x (10 + 2 x (1000 + 2441 + 10) + 3 x 81)
    assert ring.collective_ends_ns(ALL_REDUCE, 1 << 20, [0, 2], [0, 0]) == [28620] * 2
    # fewer bytes than 4 chunks of one byte per NPU: 4 chunks of 4 bytes anyway
    assert ring.collective_ends_ns(ALL_REDUCE, 0, four, [0] * 4) == [4 * 70 + 24 * 500] * 4


def test_a_send_ends_without_its_receive_and_a_receive_holds_no_slot() -> None:
    # rank 0 sends 1 KiB at 0 (519 ns) and then waits for rank 1's reply; rank 1 posts its
    # receive at 10 µs (the message is there: it ends at once) and sends at 0, its
    # receive holding no slot
    rank0 = [
        make(1, "send", comm_src=0, comm_dst=1, comm_tag=1, comm_size=1024),
        make(2, "recv", comm_src=1, comm_dst=0, comm_tag=2, comm_size=1024),
    ]
    rank1 = [make(1, us=10), make(2, "recv", deps=(1,), comm_src=0, comm_dst=1, comm_tag=1,
                                  comm_size=1024),
             make(3, "send", comm_src=1, comm_dst=0, comm_tag=2, comm_size=1024)]  # fmt: skip
    engine = astra(rank0, rank1)
    assert spans(engine, 0) == {1: (0, 0.519), 2: (0, 0.519)}
    assert spans(engine, 1) == {1: (0, 10), 2: (10, 10), 3: (0, 0.519)}


def test_a_send_names_its_destination_a_receive_its_source_the_rank_is_the_other_end() -> None:
    # the exchange above as ASTRA-sim's custom-collective examples write it: a send without
    # comm_src, a receive without comm_dst (ASTRA-sim reads neither), no is_cpu_op
    rank0 = [make(1, "send", comm_dst=1, comm_tag=1, comm_size=1024),
             make(2, "recv", comm_src=1, comm_tag=2, comm_size=1024)]  # fmt: skip
    rank1 = [make(1, us=10), make(2, "recv", deps=(1,), comm_src=0, comm_tag=1, comm_size=1024),
             make(3, "send", comm_dst=0, comm_tag=2, comm_size=1024)]  # fmt: skip
    for node in [*rank0, *rank1]:
        del node.attr[0]  # is_cpu_op: absent reads as false, as the feeder reads it
    engine = astra(rank0, rank1)
    assert spans(engine, 0) == {1: (0, 0.519), 2: (0, 0.519)}
    assert spans(engine, 1) == {1: (0, 10), 2: (10, 10), 3: (0, 0.519)}


def test_send_and_receive_need_their_far_end_and_a_tag() -> None:
    with pytest.raises(SimulationError, match=r"no comm_dst, comm_tag \(ASTRA-sim needs "
                       r"comm_dst and comm_tag on a send\)$"):  # fmt: skip
        build_astra_graph([make(1, "send", comm_src=0, comm_size=8)], 0)
    with pytest.raises(SimulationError, match=r"has no comm_src \(ASTRA-sim needs comm_src"
                       r" and comm_tag on a receive\)$"):  # fmt: skip
        build_astra_graph([make(1, "recv", comm_dst=0, comm_tag=1, comm_size=8)], 0)
    # a near end given is checked: ASTRA-sim issues a send on its source only
    with pytest.raises(SimulationError, match="sends from 1 to 2: ASTRA-sim issues a send"):
        build_astra_graph([make(1, "send", comm_src=1, comm_dst=2, comm_tag=0, comm_size=8)], 0)


def test_a_collective_a_member_never_reaches_is_a_deadlock() -> None:
    rank0 = [
        make(1, "coll", comm_type=ALL_REDUCE, comm_size=64, pg_name="1"),
        make(2, "coll", deps=(1,), comm_type=ALL_REDUCE, comm_size=64, pg_name="1"),
    ]
    with pytest.raises(SimulationError, match="deadlock: communication #1 of group '1'"):
        astra(rank0, rank0[:1])


# --- against the real ASTRA-sim --------------------------------------------------------------


def write_ranks(folder: Path, ranks: list[list], groups: dict) -> tuple[Path, Path]:
    """``folder/w.<r>.et`` for each rank and the comm-group JSON: (prefix, groups file)."""
    for rank, nodes in enumerate(ranks):
        with EtWriter(folder / f"w.{rank}.et", GlobalMetadata(version="0.0.4")) as writer:
            writer.write_all(nodes)
    (folder / "groups.json").write_text(json.dumps(groups))
    return folder / "w", folder / "groups.json"


def mixed_job(ranks: int) -> list[list]:
    """Per rank: a CPU [delay] and a CPU op on two threads, kernels on two streams of
    lengths that differ by rank, a control dependency, an all-reduce of every rank (pg
    ""), a reduce-scatter in pairs (groups 1, 2...: :func:`groups`), an all-gather and an
    all-to-all of every rank (group 9), a send to the next rank and a receive from the
    previous, and a last kernel after everything (ASTRA-sim's statistics abort on a rank
    that ends on a receive when it has CPU nodes)."""
    out = []
    for r in range(ranks):
        pair = str(1 + r // 2)
        nodes = [
            make(1, us=2 + r, cpu=True, name="[delay]"),
            make(2, us=7, cpu=True, tid=2),
            make(3, us=20 + 5 * r, deps=(1,), stream=7),
            make(4, us=9, ctrl=(2,), stream=8),
            make(5, "coll", deps=(3,), comm_type=ALL_REDUCE, comm_size=3 << 20),
            make(6, us=15, deps=(5,), stream=7),
            make(7, "coll", deps=(6,), comm_type=REDUCE_SCATTER, comm_size=1 << 22, pg_name=pair),
            make(8, "coll", deps=(4,), comm_type=ALL_GATHER, comm_size=100_001, pg_name="9"),
            make(9, us=3 * r, deps=(7,), cpu=True, tid=1),
            make(10, "coll", deps=(9,), comm_type=ALL_TO_ALL, comm_size=1 << 20, pg_name="9"),
            make(11, "send", deps=(10,), comm_src=r, comm_dst=(r + 1) % ranks, comm_tag=5,
                 comm_size=1 << 18),
            make(12, "recv", comm_src=(r - 1) % ranks, comm_dst=r, comm_tag=5,
                 comm_size=1 << 18),
            make(13, us=4, deps=(8, 11, 12)),
        ]  # fmt: skip
        out.append(nodes)
    return out


def within_5_pct(verdict: dict, result: SimResult) -> None:
    for rank in verdict["ranks"]:
        ours_ns = max(result.end[rank["rank"]]) * 1000.0
        theirs = rank["finished_ns"]
        assert abs(ours_ns - theirs) <= 0.05 * theirs, (rank["rank"], ours_ns, theirs)


def groups(ranks: int) -> dict[str, list[int]]:
    """The communicator groups of :func:`mixed_job`: pairs 1, 2... and 9, every rank."""
    pairs = {str(1 + r // 2): [r, r + 1] for r in range(0, ranks, 2)}
    return {**pairs, "9": list(range(ranks))}


@pytest.mark.parametrize("ranks", [2, 4, 6])
def test_mixed_job_matches_astra_sim(astra_sim: Any, tmp_path: Path, ranks: int) -> None:
    prefix, groups_file = write_ranks(tmp_path, mixed_job(ranks), groups(ranks))
    verdict = astra_sim.run(prefix, "--comm-groups", str(groups_file))
    assert_astra_sim_ran_all(verdict)
    paths = [tmp_path / f"w.{r}.et" for r in range(ranks)]
    within_5_pct(verdict, simulate_astra_files(paths, AstraRing(50.0, 500.0, ranks)))


def test_other_network_parameters_match_astra_sim(astra_sim: Any, tmp_path: Path) -> None:
    prefix, groups_file = write_ranks(tmp_path, mixed_job(4), groups(4))
    verdict = astra_sim.run(prefix, "--comm-groups", str(groups_file), "--gbps", "12.5",
                            "--latency-ns", "2000")  # fmt: skip
    assert_astra_sim_ran_all(verdict)
    paths = [tmp_path / f"w.{r}.et" for r in range(4)]
    within_5_pct(verdict, simulate_astra_files(paths, AstraRing(12.5, 2000.0, 4)))


@pytest.mark.parametrize("family", ["ALL_REDUCE", "ALL_GATHER", "REDUCE_SCATTER",
                                    "ALL_TO_ALL", "two_comp_nodes_dependent"])  # fmt: skip
def test_generator_families_match_astra_sim(astra_sim: Any, tmp_path: Path, family: str) -> None:
    generate(GeneratorOptions(num_npus=4), tmp_path)
    verdict = astra_sim.run(tmp_path / family)
    assert_astra_sim_ran_all(verdict)
    paths = [tmp_path / f"{family}.{r}.et" for r in range(4)]
    within_5_pct(verdict, simulate_astra_files(paths, AstraRing(50.0, 500.0, 4)))


@pytest.fixture(scope="module")
def demo_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The bundled demo's job through the pipeline (Makefile: 4 ranks, seed 1, 200 ops)."""
    return pipeline_job(tmp_path_factory.mktemp("demo"), ranks=4, seed=1, ops_per_step=200)


def simulate_family(prefix: Path, ranks: int) -> SimResult:
    return simulate_astra_files([f"{prefix}.{r}.et" for r in range(ranks)],
                                AstraRing(50.0, 500.0, ranks))  # fmt: skip


@pytest.mark.slow
def test_the_demo_job_matches_astra_sim(astra_sim: Any, demo_job: tuple[Path, Path]) -> None:
    prefix, groups_file = demo_job
    verdict = astra_sim.run(prefix, "--comm-groups", str(groups_file))
    assert_astra_sim_ran_all(verdict)
    within_5_pct(verdict, simulate_family(prefix, 4))


@pytest.mark.slow
def test_a_synthetic_job_with_worker_threads_matches_astra_sim(astra_sim: Any,
                                                               tmp_path: Path) -> None:  # fmt: skip
    # a data-loader thread, a gloo all_reduce on a worker thread, a pageable copy
    prefix, groups_file = pipeline_job(tmp_path, ranks=4, seed=2, ops_per_step=80, steps=2,
                                       worker_threads=True, pageable_async_copy=True)  # fmt: skip
    verdict = astra_sim.run(prefix, "--comm-groups", str(groups_file))
    assert_astra_sim_ran_all(verdict)
    within_5_pct(verdict, simulate_family(prefix, 4))


# --- files shaped like ASTRA-sim's custom-collective example -----------------------------

#: What ASTRA-sim 518bd51 gives on them (run.py, 50 GB/s, 500 ns): every rank 55,174 ns.
#: 14 rounds, each a 128 KiB message to the next rank (500 + 131072 / 53.687 = 2,941 ns)
#: and 7 reductions of 2 µs on the chain, the first message's send before any receive.
CUSTOM_COLLECTIVE_NS = 55_174


def test_custom_collective_files_under_astra_sims_model(tmp_path: Path) -> None:
    paths = write_ring_allreduce(tmp_path)
    result = simulate_astra_files(paths, AstraRing(50.0, 500.0, len(paths)))
    assert [round(max(ends) * 1000) for ends in result.end] == [CUSTOM_COLLECTIVE_NS] * 8
    proc = sim(*map(str, paths), "--resources", "astra-sim")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.count(" simulated 55 us\n") == 8
    # our own model reads them too (warning that nothing times their messages)
    proc = sim(*map(str, paths))
    assert proc.returncode == 0 and "error" not in proc.stderr, proc.stderr
    assert f"rank 7 ({paths[7]}): simulated " in proc.stdout


def test_custom_collective_files_match_astra_sim(astra_sim: Any, tmp_path: Path) -> None:
    paths = write_ring_allreduce(tmp_path)
    verdict = astra_sim.run(tmp_path / "custom_allreduce")
    assert_astra_sim_ran_all(verdict)
    result = simulate_astra_files(paths, AstraRing(50.0, 500.0, len(paths)))
    within_5_pct(verdict, result)
    assert [r["finished_ns"] for r in verdict["ranks"]] == [CUSTOM_COLLECTIVE_NS] * 8
