"""Print the facts about the Kineto-only recordings in ``kineto_only/`` that README.md lists.

Independent of the chakra package and of torch: it reads the committed ``*.kineto.json.gz``
files with the standard library only, so anyone can check the README numbers::

    python3 tests/data/pytorch213/kineto_only_facts.py [FOLDER]

``FOLDER`` (default: ``kineto_only/`` next to this script) lets you compare a fresh recording
(``record_kineto_only.py --out FOLDER``) with the committed one.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FILES = [
    "single/shapes.kineto.json.gz",
    "single/noshapes.kineto.json.gz",
    "gloo_2rank/rank0.kineto.json.gz",
    "gloo_2rank/rank1.kineto.json.gz",
]
HOST_CATS = ("cpu_op", "user_annotation")
COMM_ARGS = ("Collective name", "In msg nelems", "Out msg nelems", "dtype", "Process Group Name")


def load(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def thread_names(events: list[dict[str, Any]]) -> dict[Any, list[str]]:
    names: dict[Any, list[str]] = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names.setdefault(e["tid"], []).append(e["args"]["name"])
    return names


def facts(path: Path) -> None:
    trace = load(path)
    events: list[dict[str, Any]] = trace["traceEvents"]
    ops = [e for e in events if e.get("cat") in HOST_CATS and e.get("ph") == "X"]
    print(f"top-level keys: {' '.join(trace)}")
    print(f"record_shapes key: {trace.get('record_shapes', '(absent)')}")
    print(f"traceEvents: {len(events)}")
    kinds = Counter((e.get("cat", "-"), e.get("ph")) for e in events)
    print("events by (cat, ph): " + ", ".join(f"{c}/{p} {n}" for (c, p), n in kinds.most_common()))
    named = thread_names(events)
    main_tid = Counter(e["tid"] for e in ops).most_common(1)[0][0]
    for tid, _count in Counter(e["tid"] for e in ops).most_common():
        per_cat = Counter(e["cat"] for e in ops if e["tid"] == tid)
        role = "main" if tid == main_tid else "worker"
        print(
            f"thread {role} (names {named.get(tid, [])}): cpu_op {per_cat['cpu_op']}, "
            f"user_annotation {per_cat['user_annotation']}"
        )
    steps = [e for e in ops if e["name"].startswith("ProfilerStep#")]
    for e in steps:
        print(f"{e['name']}: dur {e['dur']:.3f} us")
    first = min(float(e["ts"]) for e in ops)
    last = max(float(e["ts"]) + float(e["dur"]) for e in ops)
    print(f"span of the cpu_op/user_annotation events: {last - first:.3f} us")
    annotations = Counter(e["name"] for e in ops if e["cat"] == "user_annotation")
    print(f"user_annotation names: {dict(sorted(annotations.items()))}")
    rf_ids = Counter(e["args"].get("Record function id") for e in ops)
    print(f"'Record function id' values (value: count): {dict(rf_ids.most_common(3))}")
    ext = [e["args"].get("External id") for e in ops]
    print(f"'External id': {len(set(ext))} distinct of {len(ext)}")
    dims = sum("Input Dims" in e["args"] for e in ops)
    types = sum("Input type" in e["args"] for e in ops)
    print(f"events with 'Input Dims': {dims}; with 'Input type': {types}")
    comms = [e for e in events if e.get("name") == "record_param_comms"]
    print(f"record_param_comms events: {len(comms)}")
    for e in comms:
        print("  " + ", ".join(f"{k}={e['args'].get(k)!r}" for k in COMM_ARGS))
    coll = Counter(
        (e["name"], "main" if e["tid"] == main_tid else "worker")
        for e in ops
        if e["name"].startswith(("c10d::", "gloo:"))
    )
    if coll:
        print(f"c10d/gloo ops (name, thread): {dict(sorted(coll.items()))}")
    if "distributedInfo" in trace:
        print(f"distributedInfo: {json.dumps(trace['distributedInfo'])}")


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "kineto_only"
    for rel in FILES:
        path = folder / rel
        print(f"== {rel} ({path.stat().st_size:,} bytes gz) ==")
        facts(path)
        print()


if __name__ == "__main__":
    main()
