"""The timing-free program: process groups, size knob, collective order across ranks."""

from __future__ import annotations

import pytest

from chakra.synth import SynthOptions
from chakra.synth.collectives import transfer_ns
from chakra.synth.program import plan_job, rank_actions
from chakra.synth.records import Launch


def _collectives(plan, rank: int) -> list[tuple[str, int, str]]:
    return [
        (a.collective.pg.name, a.collective.seq, a.collective.job_kind)
        for a in rank_actions(plan, rank)
        if type(a) is Launch and a.collective is not None
    ]


@pytest.mark.parametrize("ranks", [1, 2, 3, 5])
def test_groups_are_default_plus_pairs(ranks: int) -> None:
    plan = plan_job(SynthOptions(ranks=ranks))
    assert plan.groups[0].ranks == tuple(range(ranks))
    members = [r for group in plan.groups[1:] for r in group.ranks]
    assert members == list(range(ranks))
    assert all(1 <= len(group.ranks) <= 2 for group in plan.groups[1:])
    assert all(rank in plan.pair_group(rank).ranks for rank in range(ranks))


def test_ops_per_step_scales_layers() -> None:
    small = plan_job(SynthOptions(ops_per_step=1))
    large = plan_job(SynthOptions(ops_per_step=5000))
    assert small.layers == 1
    assert large.layers > 50 * small.layers


def test_members_of_a_group_issue_its_collectives_in_the_same_order() -> None:
    plan = plan_job(SynthOptions(ranks=4, steps=2, ops_per_step=150))
    per_rank = [_collectives(plan, rank) for rank in range(4)]
    for group in plan.groups:
        sequences = {
            rank: [c for c in per_rank[rank] if c[0] == group.name] for rank in group.ranks
        }
        first = sequences[group.ranks[0]]
        assert [seq for _, seq, _ in first] == list(range(len(first)))
        assert all(sequence == first for sequence in sequences.values())
    kinds = {kind for calls in per_rank for _, _, kind in calls}
    assert kinds == {"broadcast", "all_gather", "all_to_all", "send_recv", "all_reduce",
                     "reduce_scatter"}  # fmt: skip


def test_transfer_time_grows_with_size_and_group() -> None:
    assert transfer_ns("all_reduce", 1 << 20, 2) < transfer_ns("all_reduce", 1 << 22, 2)
    assert transfer_ns("all_reduce", 1 << 20, 2) < transfer_ns("all_reduce", 1 << 20, 8)
    assert transfer_ns("broadcast", 0, 1) > 0
