"""Byte-identical outputs on the shared traces: every real public trace the tools take is
linked (host ET + Kineto, or Kineto alone), converted and simulated (``chakra_sim --json``),
and the SHA-256 of each file written (and of each JSON report printed) is compared with
``tests/data/golden/shared_traces.json``. A speed change must not move a byte of them.

The digests were written by main at 48a8184 (the start of the speed work that finished
issue 35). Against 32c9cde, where issue 35 was filed, the graphs' nodes are the same;
only metadata that later issues added differ (the ET+'s ``host_source``, the ``.et``'s
``rank``, ``contradictions`` and ``threads``, the reports' new fields) and the Kineto-only
links that 32c9cde refused.

The tools run in this process, in a scratch folder holding copies of the inputs, given
relative names (the ET+ records the names it was given).

Update: ``CHAKRA_UPDATE_GOLDEN=1 python -m pytest tests/test_golden_shared.py`` rewrites the
digests; review why before committing.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

GOLDEN = REPO_ROOT / "tests" / "data" / "golden" / "shared_traces.json"
UPDATE = os.environ.get("CHAKRA_UPDATE_GOLDEN") == "1"

#: name -> (host ET or None, Kineto trace or None), relative to the shared traces
LINKED: dict[str, tuple[str | None, str]] = {
    "simple_add": ("hta/simple_add.host_et.json.gz", "hta/simple_add.kineto.json.gz"),
    "linear": ("param/linear.host_et.json.gz", "param/linear.kineto.json.gz"),
}
KINETO_ONLY = "nccl_data event_sync_multi_stream event_sync alexnet amd_mi250 triton_example"
LINKED.update({name: (None, f"hta/{name}.kineto.json.gz") for name in KINETO_ONLY.split()})
#: name -> host ET converted as it is
HOST_ONLY = {
    "allgather": "chakra/allgather.1.0.2.host_et.json.gz",
    "resnet_1gpu": "param/resnet_1gpu.1.0.3.host_et.json.gz",
    "resnet_2gpu": "param/resnet_2gpu.1.1.0.host_et.json.gz",
    "pt2": "param/pt2.1.1.1.host_et.json.gz",
}
ASTRA_SIM_RANKS = [f"astra-sim/all_reduce.{rank}.et" for rank in range(4)]


def _run(tool: str, *args: str) -> str:
    """Run console tool ``tool`` (its chakra.cli module) in this process; its stdout."""
    module = importlib.import_module(f"chakra.cli.{tool}")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as info:
        module.main([*args, "--log-level", "ERROR"])
    assert info.value.code in (0, None), f"{tool} {' '.join(args)} exited {info.value.code}"
    return printed.getvalue()


def _produce(shared: Path, work: Path) -> dict[str, str]:
    """Every output's name -> its SHA-256, written by the tools in ``work``."""
    for relative in {*HOST_ONLY.values(), *ASTRA_SIM_RANKS,
                     *(p for pair in LINKED.values() for p in pair if p)}:  # fmt: skip
        shutil.copy(shared / relative, work / Path(relative).name)
    old_cwd = os.getcwd()
    os.chdir(work)
    try:
        converted = dict(HOST_ONLY)
        for name, (host, kineto) in LINKED.items():
            host_args = ["--host-trace", Path(host).name] if host else []
            _run("trace_link", *host_args, "--device-trace", Path(kineto).name,
                 "--output-file", f"{name}.et_plus.json")  # fmt: skip
            converted[name] = f"{name}.et_plus.json"
        printed = {}
        for name, source in converted.items():
            _run("converter", "PyTorch", "--input", Path(source).name, "--output", f"{name}.et")
            printed[f"{name}.sim.json"] = _run("sim", "--json", f"{name}.et")
        ranks = [Path(p).name for p in ASTRA_SIM_RANKS]
        printed["all_reduce.sim.json"] = _run("sim", "--json", *ranks)
    finally:
        os.chdir(old_cwd)
    written = {p.name: p.read_bytes() for p in sorted(work.iterdir()) if not p.name.endswith(".gz")
               and not p.name.startswith("all_reduce.")}  # fmt: skip
    written.update({name: text.encode() for name, text in printed.items()})
    return {name: hashlib.sha256(data).hexdigest() for name, data in sorted(written.items())}


def test_outputs_on_the_shared_traces_are_byte_identical(
    shared_traces: Path, tmp_path: Path
) -> None:
    digests = _produce(shared_traces, tmp_path)
    if UPDATE:
        GOLDEN.write_text(json.dumps(digests, indent=1) + "\n")
    expected = json.loads(GOLDEN.read_text())
    assert sorted(digests) == sorted(expected), "a different set of outputs was written"
    changed = [name for name in expected if digests[name] != expected[name]]
    assert not changed, f"outputs changed: {changed}"
