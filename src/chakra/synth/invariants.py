"""Invariants of a generated job, as code: the checks the ground truth promises.

:func:`validate_job` reads every file of a job (so it is meant for test-sized jobs) and
returns the problems it finds, one sentence each; an empty tuple means the job is sound.
Times are compared in integer nanoseconds (microsecond values x 1000, rounded), so 3-decimal
floats compare exactly.
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import msgspec

from chakra.errors import PathLike
from chakra.fileio.compressed import read_input
from chakra.synth.job import JOB_TRUTH_NAME

_LAUNCH_APIS = frozenset({"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel",
                          "cudaMemcpy", "cudaMemcpyAsync", "cudaMemsetAsync"})  # fmt: skip


def _ns(value: float) -> int:
    return round(value * 1000)


def _load(path: Path) -> Any:
    return msgspec.json.decode(read_input(path))


class _Rank:
    """A rank's truth, indexed, with the reference -> (start, end) table of its edges."""

    def __init__(self, folder: Path, rank: int, suffix: str) -> None:
        self.truth = _load(folder / f"rank{rank}.truth{suffix}")
        self.kineto = _load(folder / f"rank{rank}.kineto{suffix}")
        self.host_et = _load(folder / f"rank{rank}.host_et{suffix}")
        self.runtime = {c["correlation"]: c for c in self.truth["runtime_calls"]}
        self.gpu = {g["correlation"]: g for g in self.truth["gpu_ops"]}
        self.host = {h["host_id"]: h for h in self.truth["host_ops"] if h["host_id"] is not None}

    def span(self, ref: str) -> tuple[int, int]:
        kind, _, key = ref.partition(":")
        table = {"host": self.host, "gpu": self.gpu, "runtime": self.runtime}[kind]
        item = table[int(key)]
        start = _ns(item["ts_us"])
        return start, start + _ns(item["dur_us"])


def validate_job(out_dir: PathLike) -> tuple[str, ...]:
    """Check every invariant of the job in ``out_dir``; return the problems found."""
    folder = Path(out_dir)
    job = _load(folder / JOB_TRUTH_NAME)
    suffix = ".json.gz" if job["options"]["gzip"] else ".json"
    problems: list[str] = []
    ranks = [_Rank(folder, rank, suffix) for rank in range(job["world_size"])]
    for rank, state in enumerate(ranks):
        found = _check_rank(state, job["options"])
        problems.extend(f"rank {rank}: {p}" for p in found)
    problems.extend(_check_collectives(job, ranks))
    return tuple(problems)


def _check_rank(state: _Rank, options: dict) -> list[str]:
    problems = _check_ids(state)
    problems += _check_gpu_timing(state)
    problems += _check_edges(state)
    problems += _check_kineto(state, options)
    problems += _check_host_et(state, options)
    problems += _check_stale_parents(state)
    problems += _check_host_waits(state)
    return problems


def _duplicates(values: list) -> list:
    return [value for value, count in collections.Counter(values).items() if count > 1]


def _check_ids(state: _Rank) -> list[str]:
    truth = state.truth
    problems = []
    for label, values in (
        ("host_id", [h["host_id"] for h in truth["host_ops"] if h["host_id"] is not None]),
        ("external id", [h["external_id"] for h in truth["host_ops"]]),
        ("runtime correlation", [c["correlation"] for c in truth["runtime_calls"]]),
        ("gpu correlation", [g["correlation"] for g in truth["gpu_ops"]]),
    ):
        if _duplicates(values):
            problems.append(f"duplicate {label}s {_duplicates(values)[:5]}")
    for gpu in truth["gpu_ops"]:
        launch = state.runtime.get(gpu["launch_correlation"])
        if launch is None or gpu["launch_correlation"] != gpu["correlation"]:
            problems.append(f"gpu op {gpu['correlation']} has no launch with its correlation")
        elif launch["name"] not in _LAUNCH_APIS:
            problems.append(f"gpu op {gpu['correlation']} launched by {launch['name']}")
    return problems


def _check_gpu_timing(state: _Rank) -> list[str]:
    problems = []
    by_stream: dict[int, list[tuple[int, int, int]]] = collections.defaultdict(list)
    for gpu in state.truth["gpu_ops"]:
        start, end = state.span(f"gpu:{gpu['correlation']}")
        launch_start, _ = state.span(f"runtime:{gpu['launch_correlation']}")
        if start < launch_start:
            problems.append(f"gpu op {gpu['correlation']} starts before its launch call")
        by_stream[gpu["stream"]].append((start, end, gpu["correlation"]))
    for stream, ops in by_stream.items():
        ops.sort()
        for (_s, end, first), (start, _e, second) in zip(ops, ops[1:]):
            if start < end:
                problems.append(f"gpu ops {first} and {second} overlap on stream {stream}")
    return problems


def _check_edges(state: _Rank) -> list[str]:
    problems = []
    for edge in state.truth["edges"]:
        kind, src, dst = edge["kind"], edge["src"], edge["dst"]
        try:
            src_start, src_end = state.span(src)
            dst_start, dst_end = state.span(dst)
        except KeyError:
            problems.append(f"{kind} edge {src} -> {dst} names an unknown op")
            continue
        if kind == "host_sync":
            held = dst_end >= src_end
        elif kind == "launch":
            gpu = state.gpu[int(dst.partition(":")[2])]
            held = dst_start >= src_start and f"host:{gpu['parent_host_id']}" == src
        else:
            held = dst_start >= src_end
        if not held:
            problems.append(f"{kind} edge {src} -> {dst} does not hold in the timing")
    return problems


def _check_nesting(events: list[dict]) -> list[str]:
    problems = []
    by_tid: dict[object, list[tuple[int, int, str]]] = collections.defaultdict(list)
    for event in events:
        start = _ns(event["ts"])
        by_tid[event["tid"]].append((start, -(start + _ns(event["dur"])), event["name"]))
    for tid, spans in by_tid.items():
        spans.sort()
        stack: list[int] = []
        for start, negative_end, name in spans:
            while stack and stack[-1] <= start:
                stack.pop()
            if stack and -negative_end > stack[-1]:
                problems.append(f"cpu op {name} on tid {tid} crosses its enclosing op's end")
            stack.append(-negative_end)
    return problems


def _same_span(event: dict, item: dict) -> bool:
    return _ns(event["ts"]) == _ns(item["ts_us"]) and _ns(event["dur"]) == _ns(item["dur_us"])


def _check_kineto(state: _Rank, options: dict) -> list[str]:
    events = state.kineto["traceEvents"]
    cpu = [e for e in events if e.get("cat") in ("cpu_op", "user_annotation")]
    problems = _check_nesting(cpu)
    by_external = {e["args"]["External id"]: e for e in cpu}
    want_rf = options["rf_id_in_kineto"] and not options["legacy_host_et"]
    for op in state.truth["host_ops"]:
        event = by_external.get(op["external_id"])
        if event is None or event["name"] != op["name"] or not _same_span(event, op):
            problems.append(f"host op {op['external_id']} differs from its Kineto event")
            continue
        rf_id = event["args"].get("Record function id")
        if (rf_id is not None) != want_rf:
            problems.append(f"host op {op['external_id']}: Record function id presence wrong")
        elif want_rf and op["rf_id"] is not None and rf_id != op["rf_id"]:
            problems.append(f"host op {op['external_id']}: Kineto rf_id {rf_id} != host rf_id")
    problems += _check_launches(state, events, options["flows"])
    syncs = any(e.get("cat") == "cuda_sync" for e in events)
    if syncs != options.get("cuda_sync_records", True):
        problems.append(f"cuda_sync records {'present' if syncs else 'absent'} against options")
    return problems


def _check_launches(state: _Rank, events: list[dict], flows: bool) -> list[str]:
    problems = []
    runtime = {
        e["args"]["correlation"]: e
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
    }
    gpu = {
        e["args"]["correlation"]: e
        for e in events
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
    }
    starts = {e["id"]: e for e in events if e.get("cat") == "ac2g" and e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e.get("cat") == "ac2g" and e["ph"] == "f"}
    if len(runtime) != len(state.runtime) or len(gpu) != len(state.gpu):
        problems.append("Kineto and truth disagree on the number of runtime calls or GPU ops")
    for correlation, op in state.gpu.items():
        kernel, launch = gpu.get(correlation), runtime.get(correlation)
        if kernel is None or launch is None or not _same_span(kernel, op):
            problems.append(f"gpu op {correlation} differs from its Kineto events")
            continue
        if kernel["args"]["External id"] != launch["args"]["External id"]:
            problems.append(f"gpu op {correlation}: External id differs from its launch's")
        if kernel["tid"] != op["stream"] or kernel["args"]["stream"] != op["stream"]:
            problems.append(f"gpu op {correlation}: stream differs from the truth")
        if not flows:
            continue
        start, end = starts.get(correlation), ends.get(correlation)
        if start is None or end is None:
            problems.append(f"gpu op {correlation} has no ac2g flow pair")
        elif (
            start["ts"] != launch["ts"]
            or start["tid"] != launch["tid"]
            or end["ts"] != kernel["ts"]
        ):
            problems.append(f"gpu op {correlation}: ac2g flow ends are misplaced")
    if not flows and (starts or ends):
        problems.append("ac2g flows present although flows are off")
    return problems


def _attr(node: dict, name: str) -> Any:
    if "attrs" not in node:
        return node.get(name)
    return next((a["value"] for a in node["attrs"] if a["name"] == name), None)


def _check_host_et(state: _Rank, options: dict) -> list[str]:
    nodes = state.host_et["nodes"]
    legacy = options["legacy_host_et"]
    parent_key = "parent" if legacy else "ctrl_deps"
    ids = [n["id"] for n in nodes]
    problems = [f"duplicate host ET ids {_duplicates(ids)[:5]}"] if _duplicates(ids) else []
    by_id = {n["id"]: n for n in nodes}
    if by_id.get(1, {}).get(parent_key) != 1:
        problems.append("host ET has no process root with id 1 and parent 1")
    problems += [
        f"host ET node {n['id']} has a dangling parent" for n in nodes if n[parent_key] not in by_id
    ]
    for host_id, op in state.host.items():
        node = by_id.get(host_id)
        if node is None or node["name"] != op["name"] or _attr(node, "rf_id") != op["rf_id"]:
            problems.append(f"host op {host_id} differs from its host ET node")
        elif op["parent_host_id"] is not None and node[parent_key] != op.get(
            "stale_host_parent_id", op["parent_host_id"]
        ):
            problems.append(f"host op {host_id} has a different parent in the host ET")
        elif legacy and op["rf_id"] == op["external_id"]:
            problems.append(f"legacy host op {host_id} has rf_id equal to its External id")
        elif options["host_step"] is not None and op["step"] != options["host_step"]:
            problems.append(f"host op {host_id} is outside the covered step")
    return problems


def _check_stale_parents(state: _Rank) -> list[str]:
    """A stale host ET parent is an autograd op of another thread that ended before the op
    began (``stale_host_parents``)."""
    problems = []
    for host_id, op in state.host.items():
        stale = state.host.get(op.get("stale_host_parent_id"))
        if "stale_host_parent_id" not in op:
            continue
        if stale is None or not stale["name"].startswith("autograd::engine::evaluate_function"):
            problems.append(f"host op {host_id}: stale parent is not an autograd op")
        elif stale["tid"] == op["tid"] or state.span(f"host:{stale['host_id']}")[1] > _ns(
            op["ts_us"]
        ):
            problems.append(f"host op {host_id}: stale parent has not ended on another thread")
    return problems


def _check_host_waits(state: _Rank) -> list[str]:
    """A blocked wait is self time of its parent op: on its thread, inside it, and every op
    or call of the thread that overlaps the wait encloses the parent or is the parent; it
    ends after the op it waited for, which ran on another thread."""
    problems = []
    by_external = {op["external_id"]: op for op in state.truth["host_ops"]}
    spans = collections.defaultdict(list)
    for item in [*state.truth["host_ops"], *state.truth["runtime_calls"]]:
        spans[item["tid"]].append(_span(item))
    for wait in state.truth.get("host_waits", ()):
        start, end = _span(wait)
        parent = by_external.get(wait["parent_external_id"])
        waited = by_external.get(wait["waited_for_external_id"])
        name = f"wait at {wait['ts_us']} on tid {wait['tid']}"
        if parent is None or waited is None:
            problems.append(f"{name} names an unknown op")
            continue
        parent_start, parent_end = _span(parent)
        if parent["tid"] != wait["tid"] or not parent_start <= start <= end <= parent_end:
            problems.append(f"{name} is not inside its parent op")
        if end < _span(waited)[1] or waited["tid"] == wait["tid"]:
            problems.append(f"{name} ends before the op it waited for on another thread")
        if any(s < end and start < e and not s <= parent_start <= parent_end <= e
               for s, e in spans[wait["tid"]]):  # fmt: skip
            problems.append(f"{name} is not self time of its parent op")
    return problems


def _span(item: dict) -> tuple[int, int]:
    """(start, end) in ns of a truth entry with ``ts_us`` and ``dur_us``."""
    start = _ns(item["ts_us"])
    return start, start + _ns(item["dur_us"])


def _check_collectives(job: dict, ranks: list[_Rank]) -> list[str]:
    problems = []
    for entry in job["collectives"]:
        name = f"collective pg {entry['pg_name']} seq {entry['seq']}"
        if sorted(int(r) for r in entry["gpu_correlation_by_rank"]) != sorted(entry["ranks"]):
            problems.append(f"{name}: ranks and correlations disagree")
            continue
        for rank, correlation in entry["gpu_correlation_by_rank"].items():
            op = ranks[int(rank)].gpu.get(correlation)
            tag = op and op["collective"]
            if not tag or (tag["pg_name"], tag["seq"]) != (entry["pg_name"], entry["seq"]):
                problems.append(f"{name}: rank {rank}'s GPU op is not tagged with it")
            elif ranks[int(rank)].span(f"gpu:{correlation}")[1] != _ns(entry["end_us"]):
                problems.append(f"{name}: rank {rank}'s kernel does not end at end_us")
    return problems
