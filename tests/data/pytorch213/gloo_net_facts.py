"""Print the facts about the gloo network recordings that gloo_net/README.md lists.

Standard library only (no chakra, no torch): it reads the raw ``*.json.gz`` files, so anyone
can check the README's numbers, and the tests can compare the project's loaders with them::

    python3 tests/data/pytorch213/gloo_net_facts.py [RECORDING_FOLDER...]

Default: every recording folder under ``gloo_net/`` next to this script. A recording folder
holds ``rank{r}.host_et.json.gz`` and ``rank{r}.kineto.json.gz`` for r = 0, 1, ...
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT_PREFIX = "[pytorch|profiler|execution_trace|"
THREAD_ROOT = ROOT_PREFIX + "thread]"
RFID = "Record function id"
COMM_PREFIXES = ("c10d::", "gloo:")


def load(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def attrs(node: dict[str, Any]) -> dict[str, Any]:
    return {a["name"]: a["value"] for a in node.get("attrs", [])}


def ranks_of(folder: Path) -> list[int]:
    return sorted(int(p.name[4:].split(".")[0]) for p in folder.glob("rank*.kineto.json.gz"))


# --------------------------------------------------------------------------- Kineto


def kineto_ops(kineto: dict[str, Any]) -> list[dict[str, Any]]:
    """Complete (ph X) cpu_op and user_annotation events, in trace order."""
    return [
        e
        for e in kineto["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")
    ]


def main_tid(kineto: dict[str, Any]) -> Any:
    """The thread that runs ``ProfilerStep#*`` (the Python main thread)."""
    return next(e["tid"] for e in kineto_ops(kineto) if e["name"].startswith("ProfilerStep#"))


def thread_names(kineto: dict[str, Any]) -> dict[Any, list[str]]:
    """Every ``thread_name`` metadata name per tid (a tid may be named twice)."""
    names: dict[Any, list[str]] = {}
    for e in kineto["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names.setdefault(e["tid"], []).append(e["args"]["name"])
    return names


def step_durations_us(kineto: dict[str, Any]) -> list[float]:
    steps = [e for e in kineto_ops(kineto) if e["name"].startswith("ProfilerStep#")]
    return [float(e["dur"]) for e in sorted(steps, key=lambda e: e["ts"])]


def kineto_facts(kineto: dict[str, Any]) -> dict[str, Any]:
    ops = kineto_ops(kineto)
    main = main_tid(kineto)
    per_tid = Counter("main" if e["tid"] == main else "worker" for e in ops)
    comm = Counter(
        (e["name"], e["cat"], "main" if e["tid"] == main else "worker")
        for e in ops
        if e["name"].startswith(COMM_PREFIXES)
    )
    workers = {e["tid"] for e in ops if e["tid"] != main}
    rf_ids = [e["args"][RFID] for e in ops if RFID in e.get("args", {})]
    same = sum(1 for e in ops if e.get("args", {}).get("External id") == e["args"].get(RFID))
    return {
        "events": len(kineto["traceEvents"]),
        "categories": dict(Counter(str(e.get("cat")) for e in kineto["traceEvents"])),
        "ops": len(ops),
        "ops_per_thread": dict(per_tid),
        "worker_tids_with_ops": len(workers),
        "worker_op_names": dict(Counter(e["name"] for e in ops if e["tid"] != main)),
        "thread_names": {str(t): n for t, n in thread_names(kineto).items()},
        "comm_ops": {" ".join(k): v for k, v in sorted(comm.items())},
        "rf_ids": len(rf_ids),
        "rf_ids_distinct": len(set(rf_ids)),
        "external_id_equals_rf_id": same,
        "step_us": step_durations_us(kineto),
        "distributed": kineto.get("distributedInfo"),
    }


# --------------------------------------------------------------------------- host ET


def thread_root_of(node: dict[str, Any], by_id: dict[int, dict[str, Any]]) -> int | None:
    while node["id"] != node["ctrl_deps"]:
        if node["name"] == THREAD_ROOT:
            return int(node["id"])
        node = by_id[node["ctrl_deps"]]
    return None


def host_facts(et: dict[str, Any]) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = et["nodes"]
    by_id = {n["id"]: n for n in nodes}
    roots = [n for n in nodes if n["name"] == THREAD_ROOT]
    below = Counter(
        thread_root_of(n, by_id) for n in nodes if not n["name"].startswith(ROOT_PREFIX)
    )
    comm = Counter(
        (n["name"], f"tid {attrs(n)['tid']}", f"parent {by_id[n['ctrl_deps']]['name']}")
        for n in nodes
        if n["name"].startswith(COMM_PREFIXES)
    )
    return {
        "schema": et["schema"],
        "nodes": len(nodes),
        "tid_attrs": dict(Counter(attrs(n)["tid"] for n in nodes)),
        "thread_roots": [
            {"id": n["id"], "tid": attrs(n)["tid"], "op_descendants": below[n["id"]]} for n in roots
        ],
        "comm_nodes": {" | ".join(k): v for k, v in sorted(comm.items())},
        "rf_ids": {attrs(n)["rf_id"]: n["name"] for n in nodes if attrs(n)["rf_id"] > 0},
    }


def misnested(et: dict[str, Any], kineto: dict[str, Any]) -> dict[str, int]:
    """Host ops whose host parent does not enclose them in Kineto time (both joined by
    rf_id, both on Kineto's main thread): all of them, and those that started while a
    ``gloo:*`` op ran on a worker thread."""
    by_id = {n["id"]: n for n in et["nodes"]}
    main = main_tid(kineto)
    ops = kineto_ops(kineto)
    kin = {e["args"][RFID]: e for e in ops if e["tid"] == main and RFID in e.get("args", {})}
    gloo = [(e["ts"], e["ts"] + e["dur"]) for e in ops if e["name"].startswith("gloo:")]
    bad = during_gloo = 0
    for node in et["nodes"]:
        parent = by_id[node["ctrl_deps"]]
        child_k, parent_k = kin.get(attrs(node)["rf_id"]), kin.get(attrs(parent)["rf_id"])
        if child_k is None or parent_k is None or node is parent:
            continue
        end, parent_end = child_k["ts"] + child_k["dur"], parent_k["ts"] + parent_k["dur"]
        if child_k["ts"] < parent_k["ts"] or end > parent_end:
            bad += 1
            during_gloo += any(s <= child_k["ts"] <= e for s, e in gloo)
    return {"parent_not_enclosing": bad, "of_them_started_during_gloo": during_gloo}


def join_facts(host_rf: dict[int, str], kineto: dict[str, Any]) -> dict[str, Any]:
    kin = {e["args"][RFID]: e["name"] for e in kineto_ops(kineto) if RFID in e.get("args", {})}
    joined = host_rf.keys() & kin.keys()
    return {
        "host_rf_ids": len(host_rf),
        "joined": len(joined),
        "host_only": sorted(host_rf[r] for r in host_rf.keys() - kin.keys()),
        "kineto_only": sorted(kin[r] for r in kin.keys() - host_rf.keys()),
        "joined_name_differs": sum(1 for r in joined if host_rf[r] != kin[r]),
    }


def rank_facts(folder: Path, rank: int) -> dict[str, Any]:
    kineto = load(folder / f"rank{rank}.kineto.json.gz")
    et = load(folder / f"rank{rank}.host_et.json.gz")
    host = host_facts(et)
    join = join_facts(host.pop("rf_ids"), kineto)
    join.update(misnested(et, kineto))
    return {"kineto": kineto_facts(kineto), "host": host, "join": join}


def main() -> None:
    folders = [Path(a) for a in sys.argv[1:]] or sorted(
        p for p in (HERE / "gloo_net").iterdir() if p.is_dir()
    )
    for folder in folders:
        for rank in ranks_of(folder):
            print(f"== {folder.name} rank {rank} ==")
            for part, facts in rank_facts(folder, rank).items():
                for key, value in facts.items():
                    print(f"{part}.{key}: {value}")


if __name__ == "__main__":
    main()
