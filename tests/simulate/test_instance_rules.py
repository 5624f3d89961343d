"""What-if rules narrowed to instances of an op (``@shape:``, ``@scope:``, ``@rank:``,
:mod:`chakra.simulate.selection`): on a hand-built two-layer graph whose two ``aten::addmm``
differ by input shape and enclosing module, on random graphs against a direct reading of the
rule, and on the recorded TinyBlock fixture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chakra.errors import ChakraError, ScaleRuleError
from chakra.et import GlobalMetadata, Node, set_attr, write_et
from chakra.simulate import build_graph, load_graph, rank_results, simulate, what_if
from chakra.simulate import selection as selection_module
from chakra.simulate.analysis import ScaleRule, scaled_graphs
from chakra.simulate.run import load_astra_graph
from chakra.simulate.scenarios import Scenario, run_scenarios, split_rules
from chakra.simulate.selection import with_input_shapes
from tests.simulate.test_engine import node

FC0 = "[[256],[8,128],[128,256],[],[]]"  # addmm(bias, input, weight, beta, alpha)
FC1 = "[[512],[8,256],[256,512],[],[]]"


def op(node_id: int, name: str, duration: int, dep: Optional[int], parent: Optional[int],
       shapes: str = "", stream: Optional[int] = None) -> Node:  # fmt: skip
    out = node(node_id, duration, () if dep is None else (dep,), stream=stream)
    out.name, out.inputs.shapes = name, shapes
    if parent is not None:
        out.ctrl_deps.append(parent)
    return out


def two_layers() -> list[Node]:
    """One chain (makespan = the sum of durations, 158 us): a step holding two modules,
    each running an addmm that launches a kernel (the kernel copies its op's inputs, as
    ET+ does); the second addmm has a later segment (8) after its kernel."""
    segment = op(8, "aten::addmm", 5, 7, 6)
    set_attr(segment, "segment_of", 6)
    return [
        op(1, "ProfilerStep#1", 1, None, None),
        op(2, "nn.Module: layers.0", 1, 1, 1),
        op(3, "aten::addmm", 10, 2, 2, FC0),
        op(4, "sgemm", 40, 3, 3, FC0, stream=7),
        op(5, "nn.Module: layers.1", 1, 4, 1),
        op(6, "aten::addmm", 20, 5, 5, FC1),
        op(7, "sgemm", 80, 6, 6, FC1, stream=7),
        segment,
    ]


@pytest.fixture
def et_file(tmp_path: Path) -> Path:
    path = tmp_path / "rank0.et"
    write_et(path, GlobalMetadata(version="0.0.4"), two_layers())
    return path


def matched_ids(rule: str, path: Path) -> list[int]:
    graph = load_graph(path, 0)
    return [graph.ids[i] for i in np.flatnonzero(ScaleRule.parse(rule).mask(graph))]


@pytest.mark.parametrize(("rule", "ids"), [
    ("aten::addmm=2", [3, 6, 8]),  # the name alone: both layers
    (f"aten::addmm@shape:{FC1}=2", [6, 8]),  # the whole list; a segment has its op's inputs
    ("aten::addmm@shape:[ [512], [8, 256], [256,512], [], [] ]=2", [6, 8]),  # spaces
    ("aten::addmm@shape:[256,512]=2", [6, 8]),  # one input's shape
    ("aten::addmm@shape:256x512=2", [6, 8]),
    ("aten::addmm@shape:[8,*]=2", [3, 6, 8]),  # * is any one dimension
    ("aten::addmm@shape:[*,[8,128],*,*,*]=2", [3]),  # ... or any one input
    ("aten::addmm@shape:[8,128]@shape:[128,256]=2", [3]),  # every qualifier holds
    ("*@shape:[128,256]=2", [3, 4]),  # the kernel carries its op's inputs
    ("aten::addmm@scope:*layers.1*=2", [6, 8]),  # the segment: its op's ancestors
    ("aten::addmm@scope:ProfilerStep#?=2", [3, 6, 8]),
    ("sgemm@scope:*layers.0=2", [4]),  # a kernel's launching op's ancestors
    ("gpu@scope:aten::addmm=2", [4, 7]),  # ... and the launching op itself
    ("compute@scope:nn.Module: layers.1@shape:[8,256]=2", [6, 7, 8]),
    ("aten::addmm@rank:0=2", [3, 6, 8]),
    ("aten::addmm@rank:1-3|0=2", [3, 6, 8]),
])  # fmt: skip
def test_each_qualifier_selects_its_instances(et_file: Path, rule: str, ids: list[int]) -> None:
    assert matched_ids(rule, et_file) == ids


@pytest.mark.parametrize("rule", [
    "aten::addmm@shape:[8,512]=2",
    "aten::addmm@shape:[[512],[8,256],[256,512]]=2",  # the whole list, not its start
    "aten::addmm@scope:aten::addmm=2",  # a segment's scope is not its own op
    "aten::addmm@rank:1=2",
    "*@scope:sgemm=2",
])  # fmt: skip
def test_a_qualified_rule_matching_nothing_is_an_error(et_file: Path, rule: str) -> None:
    with pytest.raises(ChakraError, match=f"--scale {rule.replace('[', '.').replace('*', '.')}"
                       ": matches no node"):  # fmt: skip
        what_if([load_graph(et_file, 0)], [ScaleRule.parse(rule)])


@pytest.mark.parametrize(("rule", "makespan", "count"), [
    (f"aten::addmm@shape:{FC1}=2", 158 + 25, 2),  # op 20 + its segment 5
    ("aten::addmm@scope:*layers.0*=0", 158 - 10, 1),
    ("sgemm@shape:[128,256]=0.5", 158 - 20, 1),
    ("gpu@scope:*layers.1*=0.5", 158 - 40, 1),
])  # fmt: skip
def test_the_what_if_makespan_moves_by_the_selected_nodes(
    et_file: Path, rule: str, makespan: float, count: int
) -> None:
    graph = load_graph(et_file, 0)
    assert rank_results(simulate([graph]))[0].simulated_makespan_us == 158
    scaled = what_if([graph], [ScaleRule.parse(rule)])
    assert rank_results(scaled)[0].simulated_makespan_us == makespan
    assert scaled.nodes_matched == (count,)


def test_a_rank_qualifier_scales_that_rank_only(tmp_path: Path) -> None:
    paths = [tmp_path / f"rank{r}.et" for r in range(2)]
    for path in paths:
        write_et(path, GlobalMetadata(version="0.0.4"), two_layers())
    graphs = [load_graph(path, rank) for rank, path in enumerate(paths)]
    scaled = what_if(graphs, [ScaleRule.parse("aten::addmm@rank:1@scope:*layers.1*=3")])
    assert scaled.nodes_matched == (2,)  # the op and its segment, on rank 1
    assert [r.simulated_makespan_us for r in rank_results(scaled)] == [158, 158 + 50]


def test_shapes_are_read_only_when_a_rule_asks(et_file: Path, monkeypatch) -> None:
    reads = []
    original = selection_module.read_nodes
    monkeypatch.setattr(selection_module, "read_nodes",
                        lambda *args: reads.append(args[0]) or original(*args))  # fmt: skip
    graph = load_graph(et_file, 0)
    assert graph.input_shapes is None  # loading keeps no inputs
    plain, _ = scaled_graphs([graph], [ScaleRule.parse("aten::addmm@scope:*layers.1*=2")])
    assert plain[0].input_shapes is None and reads == []  # scopes need no shapes
    shaped, _ = scaled_graphs([graph], [ScaleRule.parse("aten::addmm@shape:[8,256]=2")])
    assert shaped[0].input_shapes[5] == FC1 and reads == [str(et_file)]
    scaled_graphs(shaped, [ScaleRule.parse("aten::addmm@shape:[8,128]=2")])
    assert reads == [str(et_file)]  # the copy keeps them
    scenarios = [Scenario.parse(f"s{k}=aten::addmm@shape:[8,256]={k}") for k in (2, 3)]
    run_scenarios(simulate([graph]), scenarios)
    assert len(reads) == 2  # once for both scenarios


def test_a_graph_built_in_memory_takes_its_shapes_from_its_nodes() -> None:
    nodes = two_layers()
    graph = build_graph(nodes)
    rule = ScaleRule.parse("aten::addmm@shape:[8,256]=2")
    with pytest.raises(ScaleRuleError, match="rank 0: @shape: and @scope: read input shapes"):
        rule.mask(graph)
    assert list(np.flatnonzero(rule.mask(with_input_shapes(graph, nodes)))) == [5, 7]


def test_astra_sim_graphs_read_their_parents_too(et_file: Path) -> None:
    graph = load_astra_graph(et_file, 0)
    assert graph.parent_id is None
    rule = ScaleRule.parse("sgemm@scope:*layers.1*=2")
    assert list(np.flatnonzero(rule.mask(graph))) == [6]


@pytest.mark.parametrize(("text", "message"), [
    ("x@shap:[1]=2", "unknown qualifier @shap: (expected @shape:, @scope:, @rank: or @class:)"),
    ("x@shape:=2", "@shape: needs a value, e.g. @shape:[8,256]"),
    ("x@shape:[1,a]=2", "@shape:[1,a] is not a shape; expected e.g. @shape:[8,256]"),
    ("x@shape:[1.5]=2", "@shape:[1.5] is not a shape"),
    ("x@shape:[[1],[2]=2", "@shape:[[1],[2] is not a shape"),
    ("x@shape:8x=2", "@shape:8x is not a shape"),
    ("x@scope:=2", "@scope: needs a value, e.g. @scope:*layers.1*"),
    ("x@rank:a=2", "@rank:a: expected @rank:0, @rank:0|2 or @rank:4-7"),
    ("x@rank:3-1=2", "@rank:3-1: expected"),
    ("x@rank:0@rank:1=2", "@rank: is given twice; name several ranks as @rank:0|2"),
    ("@rank:0=2", "a qualifier narrows a TARGET, e.g. aten::addmm@rank:0=2 (* for every op)"),
    ("x@rank:0=-1", "factor must not be negative"),
])  # fmt: skip
def test_a_bad_qualifier_is_one_line(text: str, message: str) -> None:
    with pytest.raises(ScaleRuleError) as error:
        ScaleRule.parse(text)
    assert str(error.value).startswith(f"--scale {text}: {message}")
    assert "\n" not in str(error.value)


def test_an_at_sign_without_a_word_and_colon_stays_in_the_name() -> None:
    rule = ScaleRule.parse("a@b@rank:0=2")
    assert rule.target == "a@b" and rule.where is not None and rule.where.ranks


def test_scenarios_split_rules_at_commas_outside_brackets() -> None:
    assert split_rules(f"gpu=0.5,aten::addmm@shape:{FC1}=2,[delay]=0") == [
        "gpu=0.5", f"aten::addmm@shape:{FC1}=2", "[delay]=0"]  # fmt: skip
    scenario = Scenario.parse(f"wide fc1=aten::addmm@shape:{FC1}=2, comm=0.5")
    assert [rule.text for rule in scenario.rules] == [f"aten::addmm@shape:{FC1}=2", "comm=0.5"]
    with pytest.raises(ChakraError, match="rule 'x@shap:1=2' of scenario 's': unknown"):
        Scenario.parse("s=x@shap:1=2")


# --- random graphs: the qualifiers against a direct reading of the rule ---------------------
SHAPES = ["[[8,16],[16,32]]", "[[8,16],[16,48]]", "[[2,16]]", "[]", "[[[2,3],[2,3]],[]]"]


@st.composite
def forests(draw: st.DrawFn) -> tuple[list[Node], list[int], list[str], list[int]]:
    """Nodes 0..n-1, each with a unique name, one shape text of SHAPES and a parent before
    it (-1: none), and each node's op: itself, or for a later segment (as the converter
    writes one: no inputs, its op as parent) an op (not a segment) before it."""
    count = draw(st.integers(1, 25))
    parents = [draw(st.integers(-1, i - 1)) for i in range(count)]
    shapes = [draw(st.sampled_from(SHAPES)) for _ in range(count)]
    owner = list(range(count))
    nodes = []
    for i in range(count):
        item = node(i, draw(st.integers(1, 9)), (i - 1,) if i else ())
        item.name = f"n{i}"
        if i and draw(st.integers(0, 3)) == 0:
            ops = [j for j in range(i) if owner[j] == j]
            owner[i] = parents[i] = draw(st.sampled_from(ops))
            set_attr(item, "segment_of", owner[i])
        else:
            item.inputs.shapes = shapes[i]
        if parents[i] >= 0:
            item.ctrl_deps.append(parents[i])
        nodes.append(item)
    return nodes, parents, shapes, owner


def _has(shape: list, text: str) -> bool:
    stack = [json.loads(text)]
    while stack:
        for item in stack.pop():
            if isinstance(item, list):
                if item == shape:
                    return True
                stack.append(item)
    return False


@settings(max_examples=60, deadline=None)
@given(forests(), st.sampled_from([*SHAPES[:3], "[8,16]", "[16,48]", "[2,3]", "[]"]),
       st.integers(0, 24))  # fmt: skip
def test_a_qualified_rule_scales_what_name_rules_for_its_nodes_would(
    forest: tuple[list[Node], list[int], list[str], list[int]], shape: str, scope: int
) -> None:
    nodes, parents, shapes, owner = forest
    graph = with_input_shapes(build_graph(nodes), nodes)
    pattern = json.loads(shape)
    if any(isinstance(item, list) for item in pattern):
        by_shape = [i for i in range(len(nodes)) if json.loads(shapes[owner[i]]) == pattern]
    else:
        by_shape = [i for i in range(len(nodes)) if _has(pattern, shapes[owner[i]])]
    inside = []
    for i in range(len(nodes)):
        up = parents[owner[i]]
        while up >= 0 and up != scope:
            up = parents[up]
        if up == scope:
            inside.append(i)
    for rule, picked in ((f"*@shape:{shape}=3", by_shape), (f"*@scope:n{scope}=3", inside)):
        mask = ScaleRule.parse(rule).mask(graph)
        assert list(np.flatnonzero(mask)) == picked
        if picked:  # the same durations as one name: rule per picked node
            (qualified,), _ = scaled_graphs([graph], [ScaleRule.parse(rule)])
            by_name = [ScaleRule.parse(f"name:n{i}=3") for i in picked]
            (named,), _ = scaled_graphs([graph], by_name)
            assert qualified.duration_us == named.duration_us


# --- the recorded TinyBlock fixture -------------------------------------------------------
def test_on_the_recorded_fixture_a_shape_picks_the_addmm_of_one_layer(tmp_path: Path) -> None:
    from chakra.convert import ConvertOptions, convert_file
    from chakra.link import LinkOptions
    from chakra.link.batch import link_files
    from tests.conftest import REPO_ROOT

    data = REPO_ROOT / "tests" / "data" / "pytorch213" / "single"
    et_plus, et = tmp_path / "rank0.json", tmp_path / "rank0.et"
    link_files(data / "host_et.json.gz", data / "kineto.json.gz", et_plus, LinkOptions())
    convert_file(et_plus, et, ConvertOptions())
    graph = with_input_shapes(load_graph(et, 0), _nodes(et))
    texts, names = graph.input_shapes or [], graph.names
    ops = {texts[i] for i, name in enumerate(names) if name == "aten::addmm" and texts[i]}
    assert len(ops) >= 3  # TinyBlock's Linear layers differ in shape
    every = ScaleRule.parse("aten::addmm=2").mask(graph)
    one = ScaleRule.parse("aten::addmm@shape:[16,48]=2").mask(graph)
    picked = {texts[i] for i in np.flatnonzero(one) if texts[i]}
    assert picked == {"[[48],[8,16],[16,48],[],[]]"}  # one layer: fc 16 -> 48
    assert 0 < one.sum() < every.sum() and not (one & ~every).any()
    # the whole list as chakra_jsonizer shows it selects the same nodes, from the file
    whole = ScaleRule.parse("aten::addmm@shape:[[48], [8,16], [16,48], [], []]=2")
    assert (whole.mask(load_graph(et, 0)) == one).all()
    base = rank_results(simulate([graph]))[0].simulated_makespan_us
    scaled = what_if([graph], [ScaleRule.parse("aten::addmm@shape:[16,48]=50")])
    assert rank_results(scaled)[0].simulated_makespan_us > base
    assert scaled.nodes_matched == (int(one.sum()),)


def _nodes(path: Path) -> list[Node]:
    from chakra.et.reader import EtReader

    with EtReader(path) as reader:
        return list(reader)


def test_on_a_linked_gpu_trace_kernels_carry_their_launching_ops_shape(tmp_path: Path) -> None:
    from chakra.convert import ConvertOptions, convert_file
    from chakra.link import LinkOptions
    from chakra.link.batch import link_files
    from chakra.synth import SynthOptions, generate_job

    rank = generate_job(SynthOptions(seed=1, ranks=1, steps=1, ops_per_step=40), tmp_path).ranks[0]
    link_files(rank.host_et, rank.kineto, tmp_path / "r.json", LinkOptions())
    convert_file(tmp_path / "r.json", tmp_path / "r.et", ConvertOptions())
    nodes = {n.id: n for n in _nodes(tmp_path / "r.et")}
    graph = load_graph(tmp_path / "r.et", 0)
    mask = ScaleRule.parse("gpu@scope:aten::addmm@shape:[*,[4096,1024],[1024,3072]]=2").mask(graph)
    picked = [nodes[graph.ids[i]] for i in np.flatnonzero(mask)]
    assert picked and all(nodes[k.ctrl_deps[0]].name == "aten::addmm" for k in picked)
    assert {k.inputs.shapes for k in picked} == {"[[3072],[4096,1024],[1024,3072]]"}
    gpu = ScaleRule.parse("gpu=2").mask(graph)
    others = [nodes[graph.ids[i]] for i in np.flatnonzero(gpu & ~mask)]
    assert not any(nodes[k.ctrl_deps[0]].inputs.shapes == picked[0].inputs.shapes
                   for k in others if k.ctrl_deps)  # fmt: skip


def test_a_class_qualifier_intersects_classes() -> None:
    # a host collective (gloo: comm on the CPU), a CPU op, a kernel and an NCCL kernel
    nodes = [node(1, 10, tid=1, coll="0"), node(2, 10, tid=1), node(3, 10, stream=7),
             node(4, 10, stream=9, coll="0")]  # fmt: skip
    graph = build_graph(nodes)
    picked = {
        rule: {graph.ids[i] for i in np.flatnonzero(ScaleRule.parse(rule).mask(graph))}
        for rule in ("compute@class:gpu=2", "compute@class:cpu=2", "comm@class:cpu=2",
                     "comm@class:gpu=2")
    }  # fmt: skip
    assert picked == {"compute@class:gpu=2": {3}, "compute@class:cpu=2": {2},
                      "comm@class:cpu=2": {1}, "comm@class:gpu=2": {4}}  # fmt: skip
    with pytest.raises(ScaleRuleError, match="@class:fast"):
        ScaleRule.parse("compute@class:fast=2")
