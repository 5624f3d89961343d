"""Say whether a run of a tool kept the promise of the command-line tools.

The promise: bad input gets one line ``<prog>: error: <file>: ...`` on stderr and exit status
1 (usage errors: status 2, argparse's usage, then one such line), and no output; exit status 0
only with valid outputs. Never a traceback, a signal, a hang, a partial file, a changed input.

:func:`verdict` classifies a :class:`~tests.fuzz.process.RunResult` against a
:class:`Snapshot` of the inputs and output folder taken before the run; :func:`run_case`
does the three steps for a :class:`Case`. The runners are re-exported from
:mod:`tests.fuzz.process`.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import json
import os
import re
import signal
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from tests.fuzz.process import (
    DEFAULT_TIMEOUT_S,
    LOG_LEVEL_NAMES,
    EarlyStop,
    RunResult,
    fork_tool,
    preload,
    prog_of,
    run_tool,
)

__all__ = [
    "Case",
    "EarlyStop",
    "Outcome",
    "RunResult",
    "Snapshot",
    "Verdict",
    "check_output",
    "describe",
    "fork_tool",
    "normalise",
    "preload",
    "prog_of",
    "run_case",
    "run_tool",
    "traceback_summary",
    "verdict",
]


#: How long the tool that reads an output next may take on it (the outputs are small).
NEXT_TOOL_TIMEOUT_S = 30.0
#: A next tool's refusal that names the option giving what the file cannot hold (the rank of
#: a trace whose process-group table is unreadable: ``give --rank``).
_ASKS_FOR_AN_OPTION = re.compile(r"\(give --[\w-]+")

# --- what the run should have left behind ------------------------------------------------


def digest(path: Path) -> Optional[str]:
    """SHA-256 of a file's bytes, None when it is not a file."""
    hasher = hashlib.sha256()
    try:
        with path.open("rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                hasher.update(block)
    except OSError:
        return None
    return hasher.hexdigest()


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Everything under ``folder``: relative path -> (size, mtime_ns) of a file, (-1, 0) of a
    folder (whose time changes with any temporary file made and removed in it)."""
    found = {}
    if folder.is_dir():
        for path in folder.rglob("*"):
            with contextlib.suppress(OSError):
                stat = path.lstat()
                is_dir = path.is_dir() and not path.is_symlink()
                key = (-1, 0) if is_dir else (stat.st_size, stat.st_mtime_ns)
                found[str(path.relative_to(folder))] = key
    return found


@dataclass(frozen=True)
class Snapshot:
    """The inputs' digests and the output folders' files before a run."""

    inputs: dict[str, Optional[str]]
    folders: dict[str, dict[str, tuple[int, int]]]

    @classmethod
    def take(cls, inputs: Iterable[Path], out_dirs: Iterable[Path] = ()) -> Snapshot:
        return cls(
            inputs={str(p): digest(Path(p)) for p in inputs},
            folders={str(d): _listing(Path(d)) for d in out_dirs},
        )


class Verdict(enum.Enum):
    OK = "ok"
    CLEAN_ERROR = "clean error"
    #: stopped by the signal the runner sent (status 130 or 143, one line), leaving nothing
    #: partial behind
    INTERRUPTED = "interrupted"
    FAILURE = "failure"


@dataclass(frozen=True)
class Outcome:
    """A run's verdict; for a failure, why (``reason``) and a short stable key for grouping
    like failures (``signature``: tool, kind of failure, exception and the chakra frame that
    raised it)."""

    verdict: Verdict
    reason: str = ""
    signature: str = ""
    details: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.verdict is not Verdict.FAILURE


_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>.+)$')
_EXCEPTION = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::\s?(?P<message>.*))?$")
_PNG = b"\x89PNG\r\n\x1a\n"


def traceback_summary(stderr: str) -> Optional[tuple[str, str, str]]:
    """(exception type, message, ``chakra/…py:function`` of the innermost chakra frame) of
    the last traceback in ``stderr``; None when there is none."""
    at = stderr.rfind("Traceback (most recent call last):")
    if at < 0:
        return None
    lines = stderr[at:].splitlines()[1:]
    where, exc_type, message = "?", "?", ""
    for line in lines:
        frame = _FRAME.match(line)
        if frame:
            file = frame.group("file").replace(os.sep, "/")
            for marker in ("/chakra/", "/ci_tools/"):
                if marker in file:
                    where = f"{file[file.rfind(marker) + 1 :]}:{frame.group('func')}"
            continue
        if line.startswith(" "):
            continue
        match = _EXCEPTION.match(line)
        if match:
            exc_type, message = match.group("type"), match.group("message") or ""
            break
    return exc_type.rsplit(".", 1)[-1], message, where


def _problem_lines(result: RunResult) -> list[str]:
    """stderr without the tool's log lines (``<prog>: INFO: ...``, DEBUG and WARNING)."""
    logs = tuple(f"{result.prog}: {level}:" for level in LOG_LEVEL_NAMES)
    return [line for line in result.stderr.splitlines() if line and not line.startswith(logs)]


def _usage_block_end(lines: list[str]) -> int:
    """Index after argparse's usage lines at the start of ``lines`` (0 when none)."""
    if not lines or not lines[0].startswith("usage:"):
        return 0
    index = 1
    while index < len(lines) and lines[index].startswith(" "):
        index += 1
    return index


def check_output(path: Path) -> Optional[str]:
    """None when ``path`` is a valid output of its kind (by name), else what is wrong."""
    if not path.is_file():
        return "missing"
    name = path.name
    try:
        if name.endswith((".et", ".et.gz")):
            from chakra.et.graph_checks import validate_et

            report = validate_et(path)
            if not report.ok:
                first = report.problems[0]
                return f"chakra_validate rejects it: {first.kind}: {first.message}"[:300]
            return _next_tool_rejects("sim", (str(path),))
        if name.endswith((".json", ".json.gz")):
            from chakra.fileio import read_input

            data = read_input(path)
            try:
                json.loads(data, parse_constant=_reject_constant)
            except ValueError:  # maybe JSON Lines
                for line in data.splitlines():
                    if line.strip():
                        json.loads(line, parse_constant=_reject_constant)
            return _et_plus_converts(path)
        if name.endswith(".png"):
            return None if path.read_bytes()[:8] == _PNG else "not a PNG"
        if name.endswith(".dot"):
            text = path.read_text(encoding="utf-8")
            return None if re.match(r"\s*(strict\s+)?(di)?graph\b", text) else "not a dot graph"
        return None if path.stat().st_size > 0 else "empty"
    except RecursionError:
        return "too deep to check"
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc)[:200]}"


def _et_plus_converts(path: Path) -> Optional[str]:
    """None unless ``path`` is an ET+ that ``chakra_converter`` refuses (the next tool)."""
    from chakra.ingest.detect import TraceKind, trace_kind

    if trace_kind(path) is not TraceKind.ET_PLUS:
        return None
    with tempfile.TemporaryDirectory(prefix="chakra-fuzz-next-") as scratch:
        target = str(Path(scratch) / "next.et")
        return _next_tool_rejects(
            "converter", ("PyTorch", "--input", str(path), "--output", target)
        )


def _next_tool_rejects(module: str, argv: tuple[str, ...]) -> Optional[str]:
    """None when the tool that reads this output next accepts it (status 0), else its line
    (``next-tool`` problems: an exit-0 output that the next tool rejects)."""
    result = fork_tool(module, argv, NEXT_TOOL_TIMEOUT_S)
    if result.returncode == 0 and not result.timed_out:
        return None
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else f"status {result.returncode}"
    if result.returncode == 1 and _ASKS_FOR_AN_OPTION.search(last):
        return None  # the file is fine; the next step needs a fact only the user can give
    return f"{result.prog} rejects it: {last}"[:300]


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def verdict(
    result: RunResult,
    before: Snapshot,
    outputs: Sequence[Path] = (),
    *,
    names: Sequence[Path] = (),
    unnamed_errors: Optional[re.Pattern[str]] = None,
    stdout_json: bool = False,
    check: Callable[[Path], Optional[str]] = check_output,
    culprits: Sequence[Path] = (),
) -> Outcome:
    """Classify a run.

    OK: status 0, every path of ``outputs`` present and valid (:func:`check_output`), stdout
    JSON (one document or one per line) when ``stdout_json``. CLEAN_ERROR: status 1 with one
    ``<prog>: error: ...`` line on stderr that names one of ``names`` (default: the inputs and
    outputs) by path or file name — or matches ``unnamed_errors`` (a verdict, such as
    chakra_validate's) — or status 2 with argparse's usage lines then one such line. Both
    also need: inputs unchanged, no ``.partial`` file left in an output folder, and (for an
    error) no file added or changed there. Log lines (``<prog>: INFO: ...``, DEBUG,
    WARNING) may come first. With ``culprits`` (the one broken input among healthy ones),
    an error line must name one of those (or of ``names``), not any input. An error that
    blames a worker process that "ended abruptly" names no input: a FAILURE whatever it
    names. INTERRUPTED: the runner sent a signal (:attr:`RunResult.sent_signal`) and the
    tool ended with 128 + its number, at most one line on stderr (``<prog>: interrupted``),
    and nothing partial (see :func:`_interrupted_verdict`); a tool that had ended before
    the signal is judged as any other run. Anything else is a FAILURE, with its reason and
    signature.
    """
    fail = _failure_of(result, before)
    if fail is not None:
        return fail
    lines = _problem_lines(result)
    if result.sent_signal is not None and result.returncode == 128 + result.sent_signal:
        return _interrupted_verdict(result, before, lines, outputs, check)
    if result.returncode == 0:
        if lines:
            return _failure(result, "stray-stderr", f"status 0 with stderr {lines[0]!r}",
                            _stray_kind(lines))  # fmt: skip
        for path in outputs:
            problem = check(Path(path))
            if problem is not None:
                kind = "missing-output" if problem == "missing" else "invalid-output"
                detail = f"{Path(path).name}: {problem}"
                return _failure(result, kind, f"status 0, output {detail}", _problem_key(problem))
        if stdout_json:
            try:
                for line in result.stdout.splitlines():
                    json.loads(line, parse_constant=_reject_constant)
            except ValueError as exc:
                return _failure(result, "invalid-stdout", f"status 0, stdout not JSON: {exc}")
        return Outcome(Verdict.OK)
    blamed = [*names, *culprits] if culprits else [*names, *before.inputs, *outputs]
    return _error_verdict(result, before, lines, blamed, unnamed_errors)


#: The tool's line for a signal that stopped it (:mod:`chakra.cli.launch`, run_tool).
_INTERRUPTED = re.compile(r"(interrupted|terminated \(SIGTERM\))$")
#: The parent's line for a worker process that died: it names no input.
_WORKER_DIED = "worker process ended abruptly"


def _interrupted_verdict(
    result: RunResult,
    before: Snapshot,
    lines: list[str],
    outputs: Sequence[Path],
    check: Callable[[Path], Optional[str]],
) -> Outcome:
    """A run stopped by the runner's signal: at most one line (the tool's ``interrupted``
    line), and every file it added to an output folder a complete, valid output (one it
    committed before the signal; ``chakra_pipeline``: a finished rank, as on an error)."""
    prefix = re.compile(rf"{re.escape(result.prog)}(?: [\w-]+)*: ")
    if len(lines) > 1 or (lines and not (prefix.match(lines[0]) and _INTERRUPTED.search(lines[0]))):
        shown = lines[0][:200] if lines else ""
        kind = "interrupt-multi-line" if len(lines) > 1 else "interrupt-line"
        return _failure(result, kind, f"stopped by a signal, stderr {shown!r}"
                        + (f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""))  # fmt: skip
    for folder, files in before.folders.items():
        now = _listing(Path(folder))
        for name in sorted(n for n, stat in now.items() if files.get(n) != stat):
            path = Path(folder) / name
            if path.is_dir():
                continue
            if result.prog == "chakra_pipeline":  # it keeps the ranks it finished, only them
                if not _finished_work(path):
                    return _failure(result, "output-on-interrupt", f"stopped, but left {name}")
                continue
            if path not in outputs and not name.endswith(_CHECKED):
                return _failure(result, "output-on-interrupt", f"stopped, but left {name}")
            problem = check(path)
            if problem is not None:
                return _failure(result, "output-on-interrupt", f"stopped, left {name}: "
                                f"{problem[:200]}", _problem_key(problem))  # fmt: skip
    return Outcome(Verdict.INTERRUPTED, reason=lines[0] if lines else "(no line)")


def _failure_of(result: RunResult, before: Snapshot) -> Optional[Outcome]:
    """The failures whatever the status: a hang, a signal, a traceback, a changed input, a
    ``.partial`` file left over."""
    if result.timed_out:
        return _failure(result, "timeout", f"no answer in {result.wall_s:.0f} s")
    if result.signal is not None:
        name = signal.Signals(result.signal).name
        return _failure(result, "signal", f"killed by {name}", name)
    summary = traceback_summary(result.stderr)
    if summary is not None:
        exc_type, message, where = summary
        return _failure(result, "traceback", f"{exc_type}: {message[:200]} ({where})",
                        f"{exc_type}@{where}")  # fmt: skip
    if "MemoryError" in result.stderr:
        return _failure(result, "memory", "MemoryError without a traceback")
    for path, old in before.inputs.items():
        if digest(Path(path)) != old:
            return _failure(result, "input-modified", f"{Path(path).name} changed")
    for folder in before.folders:
        left = [name for name in _listing(Path(folder)) if name.endswith(".partial")]
        if left:
            return _failure(result, "partial-left", f"left {left[0]}")
    return None


def _error_verdict(
    result: RunResult,
    before: Snapshot,
    lines: list[str],
    names: Sequence[object],
    unnamed_errors: Optional[re.Pattern[str]],
) -> Outcome:
    code = result.returncode
    if code not in (1, 2):
        return _failure(result, "status", f"exit status {code}", str(code))
    # argparse names a subcommand's parser "<prog> <command>" (chakra_converter PyTorch)
    prefix = re.compile(rf"{re.escape(result.prog)}(?: [\w-]+)*: error: ")
    body = lines[_usage_block_end(lines) :] if code == 2 else lines
    if code == 2 and _usage_block_end(lines) == 0:
        return _failure(result, "usage-format", "status 2 without argparse's usage line")
    if len(body) != 1 or not prefix.match(body[0]):
        shown = body[0] if body else "(nothing)"
        kind = "no-error-line" if not body else "multi-line-error" if len(body) > 1 else "format"
        return _failure(result, kind, f"status {code}, stderr {shown[:200]!r}"
                        + (f" (+{len(body) - 1} lines)" if len(body) > 1 else ""))  # fmt: skip
    message = body[0][prefix.match(body[0]).end() :]  # type: ignore[union-attr]
    if _WORKER_DIED in message:
        return _failure(result, "worker-died", f"a worker's error was lost: {message[:200]!r}")
    named = any(_names(message, str(n)) for n in names)
    if code == 1 and not named and not (unnamed_errors and unnamed_errors.search(message)):
        return _failure(
            result, "unnamed-file", f"error names no file: {message[:200]!r}", normalise(message)
        )
    for folder, files in before.folders.items():
        now = _listing(Path(folder))
        changed = sorted(name for name, stat in now.items() if files.get(name) != stat)
        if result.prog == "chakra_pipeline":  # it keeps the ranks it finished (by design)
            changed = [name for name in changed if not _finished_work(Path(folder) / name)]
        if changed:
            return _failure(result, "output-on-error", f"status {code} but wrote {changed[0]}")
    return Outcome(Verdict.CLEAN_ERROR, reason=message)


def _finished_work(path: Path) -> bool:
    """Whether ``path`` is what a failed ``chakra_pipeline`` keeps: a folder of finished
    ranks only (each manifest with the outputs it names, and a comm-group file), or one of
    those files."""
    from chakra.pipeline.resume import finished_work

    folder = path if path.is_dir() else path.parent
    names = {p.name for p in folder.iterdir()} if path.is_dir() else {path.name}
    ranks = finished_work(folder).names if folder.is_dir() else frozenset()
    groups = {name for name in names if name.endswith(".comm_groups.json")}
    return bool(ranks) and names <= ranks | groups


def _names(message: str, name: str) -> bool:
    """Whether ``message`` names ``name``: by its path, or by its file name when that is a
    real one (a suffix, or 8 characters; not a folder called ``out``)."""
    base = Path(name).name
    return name in message or (("." in base or len(base) >= 8) and base in message)


def normalise(message: str, words: int = 8) -> str:
    """An error message without its particulars (paths, numbers, quoted names), cut to a
    few words: what like failures share."""
    text = re.sub(r"(/[^\s:,;()']+)+", "<path>", message)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "<q>", text)
    text = re.sub(r"-?\d[\d.,e+-]*", "N", text)
    return "-".join(text.split()[:words])


def _stray_kind(lines: list[str]) -> str:
    for line in lines:
        match = re.search(r"\b(\w+Warning)\b", line)
        if match:
            return match.group(1)
    return "text"


def _problem_key(problem: str) -> str:
    """The part of an output problem that names its kind (the validator's problem kind,
    the exception type), for the signature."""
    match = re.match(r"chakra_validate rejects it: (\w+)", problem)
    if match:
        return match.group(1)
    return problem.split(":", 1)[0][:40]


def _failure(result: RunResult, kind: str, reason: str, key: str = "") -> Outcome:
    signature = ":".join(filter(None, [result.module, kind, key]))
    details = {"command": result.command_line(), "stderr": result.stderr[-3000:]}
    return Outcome(Verdict.FAILURE, reason=reason, signature=signature, details=details)


# --- one case, end to end ----------------------------------------------------------------

Runner = Callable[..., RunResult]


@dataclass(frozen=True)
class Case:
    """One run of a tool: its arguments, the files it reads and the outputs it must write on
    success, and the folder where it writes."""

    module: str
    argv: tuple[str, ...]
    inputs: tuple[Path, ...]
    outputs: tuple[Path, ...] = ()
    out_dir: Optional[Path] = None
    unnamed_errors: Optional[re.Pattern[str]] = None
    stdout_json: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    #: more names an error line may give instead of a file's (an option: ``--num_npus``)
    names: tuple[str, ...] = ()
    #: the broken inputs among healthy ones: an error must name one of these (not merely
    #: some input, nor the output folder)
    culprits: tuple[Path, ...] = ()
    #: stop the tool with a signal this long after its start (see :class:`EarlyStop`)
    signal_after_s: Optional[float] = None
    stop_signal: int = signal.SIGINT


def run_case(case: Case, runner: Runner = run_tool) -> tuple[RunResult, Outcome]:
    """Snapshot, run and classify one case. After a success, every file the tool added to
    its output folder is checked too (by kind: ``.et``, ``.json``, ``.png``, ``.dot``).
    A case with ``signal_after_s`` runs in a subprocess (:func:`run_tool`, as its console
    script) whatever ``runner`` is: a forked runner has the imports done already."""
    before = Snapshot.take(case.inputs, [case.out_dir] if case.out_dir else [])
    if case.signal_after_s is not None:
        stop = EarlyStop(case.signal_after_s, case.stop_signal)
        result = run_tool(case.module, case.argv, case.timeout_s, cwd=case.out_dir, stop=stop)
    else:
        result = runner(case.module, case.argv, case.timeout_s, cwd=case.out_dir)
    outputs = list(case.outputs)
    if result.returncode == 0 and case.out_dir is not None:
        old = before.folders[str(case.out_dir)]
        outputs += sorted(case.out_dir / name for name in _listing(case.out_dir)
                          if name not in old and name.endswith(_CHECKED)
                          and case.out_dir / name not in outputs)  # fmt: skip
    names = [*case.names, *([case.out_dir] if case.out_dir and not case.culprits else [])]
    outcome = verdict(result, before, outputs, names=names, unnamed_errors=case.unnamed_errors,
                      stdout_json=case.stdout_json, culprits=case.culprits)  # fmt: skip
    return result, outcome


_CHECKED = (".et", ".et.gz", ".json", ".json.gz", ".png", ".dot")


def describe(result: RunResult, outcome: Outcome) -> str:
    """Several lines for an assertion message: the command, the verdict, stderr's tail."""
    return (f"{result.command_line()}\n-> {outcome.verdict.value}: {outcome.reason} "
            f"[{outcome.signature}]\nstatus {result.returncode} signal {result.signal} "
            f"{result.wall_s:.1f} s\nstderr:\n{result.stderr[-2000:]}")  # fmt: skip
