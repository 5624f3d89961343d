"""Ctrl-C and SIGTERM from a console script's first line to its exit (issue 30, finding 4):
in the first second (imports, argument parsing) they printed a ``KeyboardInterrupt``
traceback and exited -2, or died with -15. Now each script (pyproject's
``[project.scripts]``, run here as pip's wrapper runs it) sets its guard before it imports
its tool, and ends with status 130 or 143 and one line, whenever the signal comes; and
``--help`` loads neither numpy nor matplotlib (they load after the arguments parse)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import pytest

import chakra
from tests.cli.conftest import Traces

REPO = Path(__file__).resolve().parents[2]
SRC = str(Path(chakra.__file__).resolve().parents[1])
#: The tools as users run them: not with warnings as errors (the protobuf matrix runs these
#: tests under PYTHONWARNINGS=error, which turns a file an import had open when the signal
#: came into an "Exception ignored" report)
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}, "PYTHONPATH": SRC,
       "MPLBACKEND": "Agg"}  # fmt: skip
#: pyproject's [project.scripts]: script name -> "module:function" (no tomllib before 3.11)
SCRIPTS = dict(
    re.findall(
        r'^(chakra_\w+) = "([\w.]+:\w+)"$',
        (REPO / "pyproject.toml").read_text().split("[project.scripts]")[1].split("\n[")[0],
        flags=re.M,
    )
)
#: Arguments that make each tool do real work (so it imports all it needs): ``{et}`` a
#: Chakra ET, ``{host}``/``{kineto}`` a rank's traces, ``{log}`` an ASTRA-sim log, ``{out}``
#: an empty folder.
WORK = {
    "chakra_converter": ["PyTorch", "--input", "{host}", "--output", "{out}/c.et"],
    "chakra_diff": ["{et}", "{et}"],
    "chakra_generator": ["--num-npus", "8", "--output-dir", "{out}"],
    "chakra_jsonizer": ["--input", "{et}", "--output", "{out}/j.json"],
    "chakra_pipeline": ["--host-trace", "{host}", "--device-trace", "{kineto}",
                        "--output-dir", "{out}/run"],
    "chakra_sim": ["{et}", "--plot", "{out}/u.png", "--timeline", "{out}/t.json"],
    "chakra_synth": ["--output-dir", "{out}/s", "--ranks", "2"],
    "chakra_timeline_visualizer": ["--input", "{log}", "--output", "{out}/t.json",
                                   "--num-npus", "2", "--npu-frequency", "1"],
    "chakra_trace_info": ["{host}"],
    "chakra_trace_link": ["--host-trace", "{host}", "--device-trace", "{kineto}",
                          "--output-file", "{out}/l.json"],
    "chakra_validate": ["{et}"],
    "chakra_visualizer": ["--input_filename", "{et}", "--output_filename", "{out}/g.dot"],
}  # fmt: skip
#: What no script's --help may load (issue 35: each --help within 5x ``python -c pass``):
#: the libraries behind the tools, loaded once the arguments parse.
HEAVY = ("numpy", "matplotlib", "google", "msgspec")
#: The packages of chakra each script's --help may load (beside chakra.cli and
#: chakra.errors): light modules of option values (the defaults its help shows), each
#: package's ``__init__`` lazy (:func:`chakra.lazy_exports`).
HELP_MAY_LOAD = {
    "chakra_converter": {"text"},  # text.limits
    "chakra_generator": {"tools"},  # tools.option_values
    "chakra_pipeline": {"pipeline", "simulate", "views"},  # option values, default scenarios
    "chakra_synth": {"synth"},  # synth.option_values
    "chakra_timeline_visualizer": {"tools"},  # tools.option_values
    "chakra_visualizer": {"tools"},  # tools.option_values
}
#: Extension modules of the tools' dependencies: the first one mapped is a moment when the
#: tool is still importing (old scripts had no handler there).
DEPENDENCY_LIBRARIES = ("/msgspec/", "/google/_upb/", "/numpy/", "/matplotlib/")

#: What pip's console-script wrapper runs; a hook reports, at the first import past the
#: launcher, whether both signals were guarded, and at exit, which heavy modules loaded.
PROBE = (
    f"HEAVY_NAMES = {HEAVY!r}"
    + """
import atexit, os, signal, sys
seen = []
def hook(event, args):
    if event != "import" or seen:
        return
    name = str(args[0])
    if name in ("chakra", "chakra.cli", "chakra.cli.launch"):
        return
    if name.split(".")[0] not in ("chakra", "msgspec", "google", "numpy", "matplotlib"):
        return
    guarded = (signal.getsignal(signal.SIGINT) is not signal.default_int_handler
               and signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL)
    seen.append(f"{name} guarded={guarded}")
sys.addaudithook(hook)
atexit.register(lambda: os.write(2, ("PROBE " + " ".join(seen) + " heavy=" + ",".join(
    sorted(set(HEAVY_NAMES) & set(sys.modules))) + " chakra="
    + ",".join(sorted({m.split(".")[1] for m in sys.modules if m.startswith("chakra.")}))
    ).encode()))
"""
)


def _wrapper(script: str, probe: str = "") -> list[str]:
    """The command pip's wrapper for ``script`` amounts to (``-c``, so no install needed)."""
    module, function = SCRIPTS[script].split(":")
    code = (f"{probe}\nimport sys\nfrom {module} import {function}\n"
            f"sys.argv[0] = {script!r}\nsys.exit({function}())")  # fmt: skip
    return [sys.executable, "-c", code]


def _work(script: str, traces: Traces, out: Path) -> list[str]:
    fill = {"et": traces.et, "host": traces.host, "kineto": traces.kineto,
            "log": traces.astra_log, "out": out}  # fmt: skip
    return [arg.format(**fill) for arg in WORK[script]] + ["--log-level", "WARNING"]


def test_every_script_has_work_arguments() -> None:
    assert sorted(SCRIPTS) == sorted(WORK)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_the_guard_is_set_before_the_tool_loads(script: str) -> None:
    """At the first import past the launcher, both signals already have the guard; with
    --plot and --scale given, --help loads neither numpy nor matplotlib."""
    assert set(HELP_MAY_LOAD) <= set(SCRIPTS)
    extra = ["--plot", "x.png", "--scale", "gpu=2"] if script == "chakra_sim" else []
    done = subprocess.run([*_wrapper(script, PROBE), *extra, "--help"], env=ENV,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    probe = done.stderr.rsplit("PROBE ", 1)[-1]
    assert "guarded=True" in probe, probe
    heavy, loaded = probe.rsplit(" heavy=", 1)[1].split(" chakra=")
    assert heavy == "", f"{script} --help loads {heavy}"
    allowed = {"cli", "errors"} | HELP_MAY_LOAD.get(script, set())
    assert set(loaded.split(",")) <= allowed, f"{script} --help loads chakra.{loaded}"


#: What a console script's first line may import before it sets the guard (the package's
#: ``__init__`` and the launcher), past what pip's wrapper imports before it (``re``,
#: ``sys``): small modules, a few ms (the two ``importlib._bootstrap*`` are the interpreter's
#: frozen import system, named).
BEFORE_THE_GUARD_MAY_LOAD = {"chakra", "chakra.cli", "chakra.cli.launch", "__future__",
                             "signal", "importlib", "warnings", "types",
                             "importlib._bootstrap", "importlib._bootstrap_external"}  # fmt: skip


def test_the_guard_is_set_within_milliseconds_of_the_first_line() -> None:
    """Importing the launcher (pip's wrapper's line after ``import re, sys``) loads only
    small modules before the guard: ``typing`` and ``contextlib`` took 20-30 ms there under
    load, a window in which a fuzzed Ctrl-C printed a ``KeyboardInterrupt`` traceback
    (-2) and SIGTERM killed the tool (-15)."""
    code = ("import re, sys; before = set(sys.modules); import chakra.cli.launch; "
            "print(' '.join(sorted(set(sys.modules) - before)))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True,
                          text=True, timeout=60, check=True)  # fmt: skip
    loaded = set(done.stdout.split())
    assert loaded <= BEFORE_THE_GUARD_MAY_LOAD, sorted(loaded - BEFORE_THE_GUARD_MAY_LOAD)


def _first_dependency_mapped(pid: int) -> bool:
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False
    return any(library in maps for library in DEPENDENCY_LIBRARIES)


def _guarded(pid: int) -> bool:
    """Whether process ``pid`` catches SIGTERM (the guard is set: the interpreter's start-up
    is over, which a loaded machine may stretch past any fixed delay)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) >> (signal.SIGTERM - 1) & 1)


def _signal_when(process: subprocess.Popen, ready_s: Optional[float], stop: signal.Signals) -> bool:
    """Send ``stop`` once the tool maps its first dependency (``ready_s`` None) or
    ``ready_s`` after it starts (its guard set); False if it ended before."""
    began = time.monotonic()
    while process.poll() is None and time.monotonic() - began < 30:
        if ready_s is None and _first_dependency_mapped(process.pid):
            break
        if ready_s is not None and time.monotonic() - began >= ready_s and _guarded(process.pid):
            break
        time.sleep(0.001)
    if process.poll() is not None:
        return False
    process.send_signal(stop)
    return True


def _trial(script: str, argv: list[str], stop: signal.Signals, ready_s: Optional[float]) -> str:
    """Run ``script``, signal it; "" when it ended quietly with 128 + the signal, else what
    went wrong ("finished" if it ended before the signal)."""
    process = subprocess.Popen([*_wrapper(script), *argv], env=ENV, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        sent = _signal_when(process, ready_s, stop)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    if not sent:  # its work must have succeeded (a usage error also ends before any signal)
        return "finished" if process.returncode == 0 else f"{script}: {stderr!r}"
    if ready_s is not None and process.returncode in (0, -stop) and not stderr:
        # the signal came as the interpreter exited after the tool's work (the guard was
        # set, so it was not starting): CPython runs no Python handler then and restores
        # the default ones, so it exits 0 or dies of the signal, having said nothing
        return "finished"
    said = "terminated (SIGTERM)" if stop == signal.SIGTERM else "interrupted"
    lines = stderr.splitlines()
    if (
        process.returncode != 128 + stop
        or "Traceback" in stderr
        or lines[-1:] != [f"{script}: {said}"]
    ):
        return f"{script} {stop.name} at {ready_s}: status {process.returncode}, {stderr!r}"
    return ""


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_the_tool_imports_ends_it_quietly(
    traces: Traces, tmp_path: Path, stop: signal.Signals
) -> None:
    """Each script, signalled as it maps its first dependency (still importing): status
    130 / 143, its one line last, no traceback."""
    failures = []
    for script in sorted(SCRIPTS):
        out = tmp_path / script
        out.mkdir()
        failures.append(_trial(script, _work(script, traces, out), stop, None))
    assert [f for f in failures if f] == []


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_at_any_moment_ends_the_tool_quietly(
    traces: Traces, tmp_path: Path, stop: signal.Signals
) -> None:
    """Each script signalled 0.05 s to 1.2 s after its start (imports, parsing, work):
    status 130 / 143 and one line whenever the signal comes (unless it already ended)."""
    failures, signalled = [], 0
    for script in sorted(SCRIPTS):
        for ready_s in (0.05, 0.1, 0.2, 0.35, 0.5, 0.8, 1.2):
            out = tmp_path / f"{script}-{ready_s}"
            out.mkdir()
            outcome = _trial(script, _work(script, traces, out), stop, ready_s)
            signalled += outcome != "finished"
            if outcome not in ("", "finished"):
                failures.append(outcome)
    assert failures == [] and signalled >= len(SCRIPTS)


#: Code before pip's wrapper line: an object of ``__main__`` whose clean-up, at the end of
#: the interpreter's finalization (after the exit handlers, when it has put the signals'
#: default actions back), says so on stderr and takes a second, as freeing numpy's and a
#: large job's objects takes tens of ms.
SLOW_FINALIZATION = """
import os, time
class _SlowToFree:
    def __del__(self, write=os.write, sleep=time.sleep):
        write(2, b"FREEING\\n")
        sleep(1.0)
_slow = _SlowToFree()
"""


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_after_the_work_while_python_finalizes_is_ignored(
    traces: Traces, stop: signal.Signals
) -> None:
    """A signal after the tool's last line, while the interpreter frees its objects, killed
    the tool (-2, -15: a fuzzed chakra_pipeline that had reported its error); now the
    process ends with the work's status."""
    command = [*_wrapper("chakra_trace_info", SLOW_FINALIZATION), traces.host]
    with subprocess.Popen(command, env=ENV, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True) as process:  # fmt: skip
        assert process.stderr is not None
        seen = []
        for line in process.stderr:
            seen.append(line)
            if line == "FREEING\n":
                process.send_signal(stop)
                break
        rest = process.stderr.read()
        status = process.wait(timeout=60)
    assert seen[-1:] == ["FREEING\n"], "".join(seen)
    assert status == 0, f"status {status}: {''.join(seen)}{rest}"
    assert "Traceback" not in rest


#: Code before pip's wrapper line: the tool's action is interrupted (Ctrl-C) at its start,
#: and an object of ``__main__`` says on stderr when the interpreter's finalization frees it.
INTERRUPTED_WORK = """
import os
import chakra.cli.trace_info as tool
def _interrupted(args):
    raise KeyboardInterrupt
tool._info = _interrupted
class _Freed:
    def __del__(self, write=os.write):
        write(2, b"FINALIZED\\n")
_freed = _Freed()
"""


def test_an_interrupted_tool_ends_without_the_interpreters_finalization(traces: Traces) -> None:
    """After its clean-up an interrupted tool ends at once (status 130, its one line): a
    signal that cut short the lazy import of an extension module (numpy, protobuf) left it
    half set up, and the interpreter's finalization then crashed the process ("Fatal Python
    error: PyThreadState_Get", status -6, once in a few hundred signals)."""
    command = [*_wrapper("chakra_trace_info", INTERRUPTED_WORK), traces.host]
    done = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr
    assert done.stderr == "chakra_trace_info: interrupted\n"  # no FINALIZED: not finalized
    finished = subprocess.run([*_wrapper("chakra_trace_info", INTERRUPTED_WORK.replace(
        "tool._info = _interrupted", "")), traces.host], env=ENV, capture_output=True,
        text=True, timeout=60)  # fmt: skip
    assert finished.returncode == 0 and finished.stderr.endswith("FINALIZED\n")
