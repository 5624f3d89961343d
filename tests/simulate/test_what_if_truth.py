"""What-ifs against ground truth: the same synthetic program recorded with GPU kernels 2x
faster is what the speed-1 recording must predict, and the graph's edges are what make it."""

from __future__ import annotations

import json
from pathlib import Path

from chakra.convert import ConvertOptions, convert_et_plus
from chakra.convert.et_plus_input import load_et_plus
from chakra.ingest import load_device_trace, load_host_trace
from chakra.link import LinkOptions, link_traces
from chakra.link.et_plus import write_et_plus
from chakra.simulate import ScaleRule, build_graph, what_if
from chakra.synth import SynthOptions, generate_job

FASTER_GPU = ["gpu=0.5", "comm=2"]  # GPU kernels, memcpys and memsets; not the network


def true_makespan(folder: Path) -> float:
    truth = json.loads((folder / "rank0.truth.json").read_text())
    ops = [*truth["host_ops"], *truth["gpu_ops"]]
    return max(op["ts_us"] + op["dur_us"] for op in ops) - min(op["ts_us"] for op in ops)


def simulated(et_plus: Path, rules: list[str]) -> float:
    graph = build_graph(convert_et_plus(load_et_plus(et_plus), ConvertOptions()).nodes)
    return what_if([graph], [ScaleRule.parse(rule) for rule in rules]).makespans()[0]


def test_a_faster_gpu_is_predicted_and_the_edges_are_why(tmp_path: Path) -> None:
    options = SynthOptions(seed=4, ranks=1, steps=1, ops_per_step=300)
    generate_job(options, tmp_path / "speed1")
    generate_job(SynthOptions(seed=4, ranks=1, steps=1, ops_per_step=300, gpu_factor=0.5),
                 tmp_path / "gpu_half")  # fmt: skip
    truth = true_makespan(tmp_path / "gpu_half") / true_makespan(tmp_path / "speed1")
    assert truth < 0.95  # the recording at half GPU time is really shorter
    linked = link_traces(load_host_trace(tmp_path / "speed1" / "rank0.host_et.json"),
                         load_device_trace(tmp_path / "speed1" / "rank0.kineto.json"),
                         LinkOptions())  # fmt: skip
    full = tmp_path / "full.et_plus.json"
    write_et_plus(linked, full)
    replayed = simulated(full, [])
    assert abs(simulated(full, FASTER_GPU) / replayed - truth) < 0.01
    # delete one class of true dependencies: the host syncs
    document = json.loads(full.read_text())
    deps = document["chakra_link"]["dependencies"]
    document["chakra_link"]["dependencies"] = [d for d in deps if d["kind"] != "host_sync"]
    assert len(document["chakra_link"]["dependencies"]) < len(deps)
    for node in document["nodes"]:
        node.pop("sync_dep", None)
    broken = tmp_path / "no_host_sync.et_plus.json"
    broken.write_text(json.dumps(document))
    # the replay cannot tell (delay nodes absorb what the graph no longer explains)...
    assert abs(simulated(broken, []) - replayed) / replayed < 0.001
    # ...the prediction can: the waits are frozen back into the CPU's durations (truth
    # 0.873x, full graph 0.873x, without host syncs 1.000x)
    broken_ratio = simulated(broken, FASTER_GPU) / simulated(broken, [])
    assert abs(broken_ratio - truth) > 0.05
