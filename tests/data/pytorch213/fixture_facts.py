"""Print the facts about the fixtures in this folder that README.md lists.

Independent of the chakra package and of torch: it reads the committed ``*.json.gz`` files with
the standard library only, so anyone can check the README numbers::

    python3 tests/data/pytorch213/fixture_facts.py [FOLDER]

``FOLDER`` (default: this folder) lets you compare a fresh recording with the committed one.

The output is plain text, one ``== file ==`` section per host ET / Kineto pair.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PAIRS = [
    ("single/host_et.json.gz", "single/kineto.json.gz"),
    ("gloo_2rank/rank0.host_et.json.gz", "gloo_2rank/rank0.kineto.json.gz"),
    ("gloo_2rank/rank1.host_et.json.gz", "gloo_2rank/rank1.kineto.json.gz"),
]
ROOT_PREFIX = "[pytorch|profiler|execution_trace|"
RFID = "Record function id"
BASE_ATTRS = {"rf_id", "fw_parent", "seq_id", "scope", "tid", "fw_tid", "op_schema"}


def load(folder: Path, rel: str) -> dict[str, Any]:
    with gzip.open(folder / rel, "rt", encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def attrs(node: dict[str, Any]) -> dict[str, Any]:
    return {a["name"]: a["value"] for a in node.get("attrs", [])}


def is_comm(name: str) -> bool:
    return name == "record_param_comms" or name.startswith(("c10d::", "gloo:", "nccl:"))


def host_facts(et: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Print host ET facts; return the nodes with rf_id > 0, keyed by rf_id."""
    nodes: list[dict[str, Any]] = et["nodes"]
    by_id = {n["id"]: n for n in nodes}
    print(f"top-level keys: {sorted(et)}")
    print(f"schema: {et['schema']!r}")
    print(f"nodes: {len(nodes)}; ids unique: {len(by_id) == len(nodes)}")
    ids = [n["id"] for n in nodes]
    print(f"'nodes' array in ascending id order: {ids == sorted(ids)}; max id: {max(ids)}")
    rf = [(attrs(n)["rf_id"], n) for n in nodes]
    positive = [(r, n) for r, n in rf if r > 0]
    print(f"nodes with rf_id > 0: {len(positive)} ({len({r for r, _ in positive})} distinct)")
    zero = Counter(n["name"] for r, n in rf if r == 0)
    print(f"nodes with rf_id == 0: {sum(zero.values())}: {dict(sorted(zero.items()))}")
    tids = Counter(attrs(n)["tid"] for n in nodes)
    print(f"distinct tid attrs: {len(tids)}: {dict(sorted(tids.items()))}")

    def thread_of(node: dict[str, Any]) -> int | None:
        while node["id"] != node["ctrl_deps"]:
            if node["name"] == ROOT_PREFIX + "thread]":
                return int(node["id"])
            node = by_id[node["ctrl_deps"]]
        return None

    below: Counter[int | None] = Counter(
        thread_of(n) for n in nodes if not n["name"].startswith(ROOT_PREFIX)
    )
    for n in sorted(nodes, key=lambda n: n["id"]):
        if n["name"].startswith(ROOT_PREFIX):
            extra = f", op descendants {below[n['id']]}" if n["name"].endswith("thread]") else ""
            print(
                f"root/thread node: id {n['id']} {n['name']} ctrl_deps {n['ctrl_deps']} "
                f"tid attr {attrs(n)['tid']}{extra}"
            )
    steps = sorted(n["name"] for n in nodes if n["name"].startswith("ProfilerStep"))
    print(f"ProfilerStep nodes: {steps}")
    extra_attrs = Counter(a for n in nodes for a in attrs(n) if a not in BASE_ATTRS)
    print(f"attrs beyond the 7 base attrs (node counts): {dict(sorted(extra_attrs.items()))}")
    comm = Counter(n["name"] for n in nodes if is_comm(n["name"]))
    print(f"comm nodes: {dict(sorted(comm.items()))}")
    rpc = [n for n in nodes if n["name"] == "record_param_comms"]
    for n in rpc:
        print(f"record_param_comms id {n['id']}: { {k: v for k, v in attrs(n).items()} }")
    for n in nodes:
        if n["name"] == "## process_group:init ##":
            print(f"process_group:init id {n['id']} rf_id {attrs(n)['rf_id']}:")
            for pg in json.loads(n["inputs"]["values"][0]):
                print(f"  pg {pg}")
    return {r: n for r, n in positive}


def kineto_facts(trace: dict[str, Any], host: dict[int, dict[str, Any]]) -> None:
    events: list[dict[str, Any]] = trace["traceEvents"]
    print(f"top-level keys: {sorted(trace)}")
    print(f"events: {len(events)}")
    cats = Counter((e.get("cat", "(no cat)"), e.get("ph")) for e in events)
    print(f"events per (cat, ph): {dict(sorted(cats.items()))}")
    ops = [e for e in events if e.get("cat") in ("cpu_op", "user_annotation")]
    with_rf = [e for e in ops if RFID in e.get("args", {})]
    rf_ids = Counter(e["args"][RFID] for e in with_rf)
    print(
        f"cpu_op/user_annotation: {len(ops)}; with 'Record function id': {len(with_rf)} "
        f"({len(rf_ids)} distinct)"
    )
    print(f"distinct tids of cpu_op/user_annotation: {dict(Counter(e['tid'] for e in ops))}")
    steps = [e["name"] for e in ops if e["name"].startswith("ProfilerStep")]
    print(f"ProfilerStep events: {steps}")
    print(f"distributedInfo: {trace.get('distributedInfo', 'absent')}")
    comm = Counter((e["name"], e["cat"]) for e in ops if is_comm(e["name"]))
    print(f"comm events (name, cat): {dict(sorted(comm.items()))}")

    kin = {e["args"][RFID]: e for e in with_rf}
    both = sorted(set(host) & set(kin))
    print(f"host rf_ids (>0) found as Kineto 'Record function id': {len(both)} of {len(host)}")
    host_only = Counter(host[r]["name"] for r in set(host) - set(kin))
    kin_only = Counter(kin[r]["name"] for r in set(kin) - set(host))
    print(f"host-only rf_ids by name: {dict(sorted(host_only.items()))}")
    print(f"Kineto-only rf_ids by name: {dict(sorted(kin_only.items()))}")
    names_differ = [(r, host[r]["name"], kin[r]["name"]) for r in both]
    names_differ = [x for x in names_differ if x[1] != x[2]]
    print(f"joined pairs whose names differ: {names_differ}")
    main_tid = next(e["tid"] for e in ops if e["name"].startswith("ProfilerStep"))
    off_main = Counter(
        (kin[r]["name"], attrs(host[r])["tid"]) for r in both if kin[r]["tid"] != main_tid
    )
    print(f"joined ops on a non-main Kineto tid (name, host tid attr): {dict(off_main)}")
    ext_eq = sum(1 for e in with_rf if e["args"].get("External id") == e["args"][RFID])
    print(f"events whose 'External id' equals 'Record function id': {ext_eq} of {len(with_rf)}")
    by_id = {n["id"]: n for n in host.values()}
    for r in sorted(r for r in host if is_comm(host[r]["name"])):
        node = host[r]
        parent = by_id.get(node["ctrl_deps"], {"name": f"id {node['ctrl_deps']}"})["name"]
        where = "absent" if r not in kin else kin[r]["cat"]
        if r in kin:
            where += ", main tid" if kin[r]["tid"] == main_tid else f", other tid {kin[r]['tid']}"
        print(
            f"comm rf_id {r}: {node['name']} (host id {node['id']}, parent {parent}, "
            f"host tid attr {attrs(node)['tid']}; Kineto: {where})"
        )


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    for et_rel, kineto_rel in PAIRS:
        print(f"== {et_rel} ==")
        host = host_facts(load(folder, et_rel))
        print(f"== {kineto_rel} ==")
        kineto_facts(load(folder, kineto_rel), host)
        print()


if __name__ == "__main__":
    main()
