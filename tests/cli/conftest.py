"""Shared by the tests of the tools' outputs: one small file of each kind, and a way to run a
tool in this process and see its exit status and stderr."""

from __future__ import annotations

import importlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from chakra.convert import ConvertOptions, convert_file
from chakra.link.batch import link_files
from chakra.link.linked_trace import LinkOptions
from chakra.synth import SynthOptions, generate_job

TEXT_WORKLOAD = Path(__file__).resolve().parents[1] / "data" / "text_workloads" / "DATA.txt"
ASTRA_SIM_LOG = """\
issue,sys->id=0,tick=1000,node->id=5,node->name=COMP_NODE
issue,sys->id=1,tick=500,node->id=7,node->name=aten::add
callback,sys->id=0,tick=3000,node->id=5,node->name=COMP_NODE
callback,sys->id=1,tick=2000,node->id=7,node->name=aten::add
"""


@dataclass(frozen=True)
class Traces:
    """One rank's host ET and Kineto trace, its ET+ and Chakra ET, a text workload and an
    ASTRA-sim log, in a folder no test writes into (tests copy what they overwrite)."""

    host: Path
    kineto: Path
    et_plus: Path
    et: Path
    text: Path
    astra_log: Path


@pytest.fixture(scope="session")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Traces:
    folder = tmp_path_factory.mktemp("traces")
    rank = generate_job(SynthOptions(seed=1, ranks=1, steps=1, ops_per_step=40), folder).ranks[0]
    et_plus, et = folder / "rank0.et_plus.json", folder / "rank0.et"
    link_files(rank.host_et, rank.kineto, et_plus, LinkOptions())
    convert_file(et_plus, et, ConvertOptions())
    text = folder / "DATA.txt"
    shutil.copy(TEXT_WORKLOAD, text)
    log = folder / "astra.log"
    log.write_text(ASTRA_SIM_LOG)
    return Traces(Path(rank.host_et), Path(rank.kineto), et_plus, et, text, log)


@dataclass(frozen=True)
class Outcome:
    """A tool's exit status, stdout and the lines it wrote on stderr."""

    status: int
    stdout: str
    errors: list[str]

    def one_line(self, status: int, *parts: str) -> str:
        """Assert the tool ended with ``status`` and one error line holding ``parts``."""
        assert self.status == status, self.errors
        assert "Traceback" not in "\n".join(self.errors)
        lines = [line for line in self.errors if ": error: " in line]
        assert len(lines) == 1, self.errors
        for part in parts:
            assert part in lines[0], lines[0]
        if status == 1:  # a usage error follows argparse's usage line
            assert len(self.errors) == 1, self.errors
        return lines[0]


Runner = Callable[..., Outcome]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture) -> Runner:
    """``cli("jsonizer", *args)``: run ``chakra.cli.jsonizer.main(args)`` here."""

    def run(name: str, *args: object) -> Outcome:
        capsys.readouterr()
        module = importlib.import_module(f"chakra.cli.{name}")
        with pytest.raises(SystemExit) as exited:
            module.main([str(arg) for arg in args])
        captured = capsys.readouterr()
        code = exited.value.code
        return Outcome(code if isinstance(code, int) else 1, captured.out,
                       captured.err.splitlines())  # fmt: skip

    return run
