"""What is fuzzed: the seeds of each input format and the tools that read that format.

:func:`build_seeds` makes the seeds in a folder from the checked-in fixtures (the PyTorch
2.13 traces, the text workloads) and a small synthetic 2-rank job, by linking, converting and
simulating them. :data:`FORMATS` names, per format, how to mutate a seed and which tool
invocations (:class:`~tests.fuzz.harness.Case`) may read the mutant, with a few option
variants each. :func:`fuzz_one` draws one of them, writes the mutant and runs the case.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
import shutil
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from tests.fuzz.et_mutators import EtSeed, mutate_et
from tests.fuzz.harness import Case, Outcome, Runner, RunResult, Verdict, normalise, run_case
from tests.fuzz.mutators import JsonSeed, mutate_json
from tests.fuzz.stream_mutators import Mutation, maybe_gzip, mutate_lines, weighted

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "tests" / "data" / "pytorch213"
TEXT_WORKLOADS = REPO_ROOT / "tests" / "data" / "text_workloads"
#: chakra_validate's own verdict on a bad graph, not an input error
VALIDATION_FAILED = re.compile(r"files? failed validation|process groups? differ")
ASTRA_LOG = """\
[info] ASTRA-sim log
issue,sys->id=0,tick=1000,node->id=5,node->name=COMP_NODE
issue,sys->id=1,tick=500,node->id=7,node->name=aten::add, alpha=1
callback,sys->id=0,tick=3000,node->id=5,node->name=COMP_NODE
issue,sys->id=0,tick=3000,node->id=6,node->name=COMM_COLL_NODE
callback,sys->id=1,tick=2000,node->id=7,node->name=aten::add, alpha=1
callback,sys->id=0,tick=9000,node->id=6,node->name=COMM_COLL_NODE
"""


@dataclass(frozen=True)
class Seed:
    """One seed file of a format: its name, path, and the files a tool reads beside it
    (``partner``: the other half of a host/Kineto pair; ``peer``: another rank's file;
    ``job``: every rank's (host ET, Kineto trace) of the seed's job, rank 0 first, the seed
    being one of rank 0's)."""

    name: str
    path: Path
    partner: Optional[Path] = None
    peer: Optional[Path] = None
    weight: int = 3
    job: tuple[tuple[Path, Path], ...] = ()


@dataclass
class Seeds:
    """Every format's seeds, built once per session."""

    folder: Path
    by_format: dict[str, list[Seed]] = field(default_factory=dict)
    _parsed: dict[Path, Any] = field(default_factory=dict)

    def parsed(self, seed: Seed, parse: Callable[[Seed], Any]) -> Any:
        if seed.path not in self._parsed:
            self._parsed[seed.path] = parse(seed)
        return self._parsed[seed.path]


def build_seeds(folder: Path) -> Seeds:
    """Link, convert and simulate the fixtures into ``folder``: the seeds of every format."""
    from chakra.convert import ConvertOptions, convert_file
    from chakra.link.batch import link_files
    from chakra.link.linked_trace import LinkOptions
    from chakra.ranks.rank_read import simulate_agreed
    from chakra.synth import SynthOptions, generate_job
    from chakra.views.timeline import chrome_trace

    folder.mkdir(parents=True, exist_ok=True)
    synth = folder / "synth"
    generate_job(SynthOptions(seed=1, ranks=2, steps=1, ops_per_step=30), synth)
    synth3 = folder / "synth3"  # a 3-rank job, for chakra_pipeline -j 2 on a folder
    generate_job(SynthOptions(seed=3, ranks=3, steps=1, ops_per_step=12), synth3)
    job3 = tuple((synth3 / f"rank{r}.host_et.json", synth3 / f"rank{r}.kineto.json")
                 for r in range(3))  # fmt: skip
    pairs = {
        "gloo": [(FIXTURES / "gloo_2rank" / f"rank{r}.host_et.json.gz",
                  FIXTURES / "gloo_2rank" / f"rank{r}.kineto.json.gz") for r in (0, 1)],
        "synth": [(synth / f"rank{r}.host_et.json", synth / f"rank{r}.kineto.json")
                  for r in (0, 1)],
        "single": [(FIXTURES / "single" / "host_et.json.gz",
                    FIXTURES / "single" / "kineto.json.gz")],
    }  # fmt: skip
    et_plus: dict[str, list[Path]] = {}
    ets: dict[str, list[Path]] = {}
    for name, ranks in pairs.items():
        for rank, (host, device) in enumerate(ranks):
            linked = folder / f"{name}.{rank}.et_plus.json"
            link_files(host, device, linked, LinkOptions())
            converted = folder / f"{name}.{rank}.et"
            convert_file(linked, converted, ConvertOptions())
            et_plus.setdefault(name, []).append(linked)
            ets.setdefault(name, []).append(converted)
    timeline = folder / "synth.timeline.json"
    timeline.write_text(json.dumps(chrome_trace(simulate_agreed([ets["synth"][0]]))))
    log = folder / "astra_sim.log"
    log.write_text(ASTRA_LOG)

    def pair_seeds(side: int) -> list[Seed]:
        three = Seed("synth3", job3[0][side], partner=job3[0][1 - side], weight=2, job=job3)
        return [Seed(name, ranks[0][side], partner=ranks[0][1 - side],
                     weight=1 if name == "single" else 3, job=tuple(ranks))
                for name, ranks in pairs.items()] + [three]  # fmt: skip

    return Seeds(folder, {
        "host": pair_seeds(0),
        "kineto": pair_seeds(1),
        "et_plus": [Seed(n, p[0], weight=1 if n == "single" else 3)
                    for n, p in et_plus.items()],
        "et": [Seed(n, p[0], peer=p[1] if len(p) > 1 else None,
                    weight=1 if n == "single" else 3) for n, p in ets.items()],
        "text": [Seed(p.stem, p) for p in sorted(TEXT_WORKLOADS.glob("*.txt"))],
        "chrome": [Seed("synth.timeline", timeline)],
        "astra_log": [Seed("astra_sim.log", log)],
    })  # fmt: skip


# --- mutating a seed -----------------------------------------------------------------------


def _json_seed(layout: str) -> Callable[[Seed], JsonSeed]:
    def parse(seed: Seed) -> JsonSeed:
        from chakra.fileio import read_input

        return JsonSeed(seed.name, json.loads(read_input(seed.path)), layout)

    return parse


def _mutate_json(layout: str) -> Callable[[Seeds, Seed, random.Random], tuple[bytes, Mutation]]:
    def mutate(seeds: Seeds, seed: Seed, rng: random.Random) -> tuple[bytes, Mutation]:
        data, mutation = mutate_json(seeds.parsed(seed, _json_seed(layout)), rng)
        data, _ = maybe_gzip(data, rng, mutation)
        return data, mutation

    return mutate


def _mutate_et(seeds: Seeds, seed: Seed, rng: random.Random) -> tuple[bytes, Mutation]:
    parsed = seeds.parsed(seed, lambda s: EtSeed(s.name, _plain(s.path)))
    data, mutation = mutate_et(parsed, rng)
    data, _ = maybe_gzip(data, rng, mutation)
    return data, mutation


def _mutate_text(seeds: Seeds, seed: Seed, rng: random.Random) -> tuple[bytes, Mutation]:
    text = seeds.parsed(seed, lambda s: s.path.read_text())
    data, mutation = mutate_lines(seed.name, text, rng)
    if rng.randrange(12) == 0:
        data, _ = maybe_gzip(data, rng, mutation)
    return data, mutation


def _plain(path: Path) -> bytes:
    from chakra.fileio import read_input

    return read_input(path)


# --- the tools that read each format -------------------------------------------------------

# make(mutant, seed, out, rng) -> Case
CaseMaker = Callable[[Path, Seed, Path, random.Random], Case]


def _maybe(rng: random.Random, *options: str) -> list[str]:
    """One of ``options`` half the time (nothing otherwise)."""
    return [options[rng.randrange(len(options))]] if rng.randrange(2) else []


def _link_host(m: Path, s: Seed, o: Path, rng: random.Random) -> Case:
    assert s.partner is not None
    out = o / "linked.json"
    return Case("trace_link", ("--chakra-host-trace", str(m), "--chakra-device-trace",
                               str(s.partner), "--output-file", str(out)),
                (m, s.partner), (out,), o)  # fmt: skip


def _link_device(m: Path, s: Seed, o: Path, rng: random.Random) -> Case:
    assert s.partner is not None
    out = o / "linked.json"
    return Case("trace_link", ("--chakra-host-trace", str(s.partner), "--chakra-device-trace",
                               str(m), "--output-file", str(out)),
                (m, s.partner), (out,), o)  # fmt: skip


def _pipeline(host_side: bool) -> CaseMaker:
    def make(m: Path, s: Seed, o: Path, rng: random.Random) -> Case:
        assert s.partner is not None
        host, device = (m, s.partner) if host_side else (s.partner, m)
        return Case("pipeline", ("--host-trace", str(host), "--device-trace", str(device),
                                 "--output-dir", str(o / "run"), "--no-plot"),
                    (m, s.partner), (), o)  # fmt: skip

    return make


def _pipeline_pool(host_side: bool) -> CaseMaker:
    """``chakra_pipeline --trace-dir JOB -j 2`` on a folder of the seed's job (2 or 3 ranks)
    whose rank 0 has the mutant for its host ET (or Kineto trace), the other files healthy
    copies: an error raised in a worker process must reach the user as one line naming the
    mutant's file, as with ``-j 1``. A seed of a 1-rank job gets :func:`_pipeline`."""
    single_rank = _pipeline(host_side)

    def make(m: Path, s: Seed, o: Path, rng: random.Random) -> Case:
        if len(s.job) < 2:
            return single_rank(m, s, o, rng)
        job = m.parent / "job"
        job.mkdir()
        files = []
        for rank, pair in enumerate(s.job):
            for source, kind in zip(pair, ("host_et", "kineto")):
                gz = ".gz" if source.name.endswith(".gz") else ""
                copy = job / f"rank{rank}.{kind}.json{gz}"
                shutil.copyfile(source, copy)
                files.append(copy)
        at = 0 if host_side else 1
        files[at].unlink()
        files[at] = files[at].with_name(files[at].name.removesuffix(".gz"))  # gzip is sniffed
        shutil.copyfile(m, files[at])
        return Case("pipeline", ("--trace-dir", str(job), "--output-dir", str(o / "run"),
                                 "--no-plot", "-j", "2"), (m, *files), (), o,
                    culprits=(files[at],))  # fmt: skip

    return make


#: Files left at ``PREFIX.comm_groups.json`` by someone else: not a group table, or another
#: job's (a world of 8 ranks): the converter must refuse them and write neither file.
STALE_GROUP_FILES = ("not json\n", "[1, 2]\n", '{"1": [0, 1, 2, 3, 4, 5, 6, 7], "2": [0, 1]}\n')


def _convert(*extra: str) -> CaseMaker:
    def make(m: Path, s: Seed, o: Path, rng: random.Random) -> Case:
        out = o / "converted.et"
        options = [*extra, *_maybe(rng, "--no-gaps", "--validate")]
        if rng.randrange(5) == 0:  # a grouped output whose second file cannot be merged
            stale = STALE_GROUP_FILES[rng.randrange(len(STALE_GROUP_FILES))]
            (o / "converted.comm_groups.json").write_text(stale)
        return Case("converter", ("PyTorch", "--input", str(m), "--output", str(out),
                                  *options), (m,), (out,), o)  # fmt: skip

    return make


def _trace_info(m: Path, s: Seed, o: Path, rng: random.Random) -> Case:
    as_json = rng.randrange(2) == 0
    return Case("trace_info", (str(m), *(["--json"] if as_json else [])), (m,), (), o,
                stdout_json=as_json)  # fmt: skip


def _sim(m: Path, s: Seed, o: Path, rng: random.Random) -> Case:
    files = [m, s.peer] if s.peer is not None and rng.randrange(3) == 0 else [m]
    roll = rng.randrange(4)
    options: list[str] = []
    outputs: tuple[Path, ...] = ()
    if roll == 0:
        options = ["--timeline", str(o / "timeline.json")]
        outputs = (o / "timeline.json",)
    elif roll == 1:
        options = ["--resources", "astra-sim"]
    elif roll == 2:
        options = ["--json"]
    if rng.randrange(4) == 0:  # simulate what the checks find anyway
        options.append("--lenient")
    return Case("sim", (*map(str, files), *options), tuple(files), outputs, o,
                stdout_json=roll == 2)  # fmt: skip


def _validate(m: Path, s: Seed, o: Path, rng: random.Random) -> Case:
    files = [m, s.peer] if s.peer is not None and rng.randrange(3) == 0 else [m]
    as_json = rng.randrange(2) == 0
    return Case("validate", (*map(str, files), *(["--json"] if as_json else [])),
                tuple(files), (), o, unnamed_errors=VALIDATION_FAILED)  # fmt: skip


def _jsonizer(m: Path, s: Seed, o: Path, rng: random.Random) -> Case:
    out = o / "jsonized.json"
    return Case("jsonizer", ("--input_filename", str(m), "--output_filename", str(out),
                             *_maybe(rng, "--jsonl")), (m,), (out,), o)  # fmt: skip


def _visualizer(m: Path, s: Seed, o: Path, rng: random.Random) -> Case:
    out = o / ("graph.dot" if rng.randrange(3) else "graph.graphml")
    return Case("visualizer", ("--input_filename", str(m), "--output_filename", str(out)),
                (m,), (out,), o)  # fmt: skip


def _text(m: Path, s: Seed, o: Path, rng: random.Random) -> Case:
    npus = (0, -1)[rng.randrange(2)] if rng.randrange(24) == 0 else 1 + rng.randrange(4)
    passes = (0, -1)[rng.randrange(2)] if rng.randrange(24) == 0 else 1 + rng.randrange(3)
    prefix = o / "workload"
    outputs = tuple(Path(f"{prefix}.{npu}.et") for npu in range(max(npus, 0)))
    return Case("converter", ("Text", "--input", str(m), "--output", str(prefix),
                              "--num-npus", str(npus), "--num-passes", str(passes)),
                (m,), outputs, o)  # fmt: skip


def _timeline_chrome(m: Path, s: Seed, o: Path, rng: random.Random) -> Case:
    out = o / "timeline.json"
    return Case("timeline_visualizer", ("--input_filename", str(m), "--output_filename",
                                        str(out), "--input-format", "chakra-sim"),
                (m,), (out,), o)  # fmt: skip


def _timeline_log(m: Path, s: Seed, o: Path, rng: random.Random) -> Case:
    out = o / "timeline.json"
    npus = (1, 2, 4)[rng.randrange(3)]
    frequency = ("1000", "1", "0.001", "1e9")[rng.randrange(4)]
    return Case("timeline_visualizer", ("--input_filename", str(m), "--output_filename",
                                        str(out), "--num_npus", str(npus),
                                        "--npu_frequency", frequency), (m,), (out,), o)  # fmt: skip


@dataclass(frozen=True)
class Format:
    """An input format: how to mutate its seeds, the suffix of a mutant's name, and the
    tool invocations that read it (weighted)."""

    name: str
    mutate: Callable[[Seeds, Seed, random.Random], tuple[bytes, Mutation]]
    suffix: str
    tools: Sequence[tuple[int, CaseMaker]]


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("host", _mutate_json("compact"), ".json",
           ((4, _link_host), (2, _pipeline_pool(True)), (4, _convert("--rank", "0")),
            (2, _trace_info), (2, _sim), (1, _pipeline(True)))),
    Format("kineto", _mutate_json("compact"), ".json",
           ((6, _link_device), (2, _pipeline_pool(False)), (2, _trace_info),
            (1, _pipeline(False)))),
    Format("et_plus", _mutate_json("et_plus"), ".json",
           ((5, _convert()), (3, _sim), (1, _trace_info))),
    Format("et", _mutate_et, ".et",
           ((4, _sim), (3, _validate), (2, _jsonizer), (2, _trace_info), (2, _visualizer))),
    Format("text", _mutate_text, ".txt", ((1, _text),)),
    Format("chrome", _mutate_json("compact"), ".json", ((1, _timeline_chrome),)),
    Format("astra_log", _mutate_text, ".log", ((1, _timeline_log),)),
)}  # fmt: skip
#: The tools' modules, to import before forking
MODULES = ("converter", "jsonizer", "pipeline", "sim", "timeline_visualizer", "trace_info",
           "trace_link", "validate", "visualizer")  # fmt: skip


# --- one case ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """A failure: its signature, why, what the mutant was, and the command."""

    signature: str
    reason: str
    mutation: str
    command: str
    stderr_tail: str


@dataclass(frozen=True)
class CaseReport:
    mutation: Mutation
    mutant: Path
    runs: tuple[tuple[RunResult, Outcome], ...]

    @property
    def findings(self) -> list[Finding]:
        return [Finding(o.signature, o.reason, str(self.mutation), r.command_line(),
                        r.stderr[-1500:])
                for r, o in self.runs if o.verdict is Verdict.FAILURE]  # fmt: skip


def _pick(rng: random.Random, table: Sequence[tuple[int, Any]]) -> Any:
    return weighted(rng, table)


#: One case in this many (of every format) is stopped early by a signal: Ctrl-C (SIGINT)
#: or SIGTERM, 0 to ``SIGNAL_WITHIN_S`` seconds after the start (imports and argument
#: parsing take the first 0.3 to 0.9 s); the tool must end with status 130 or 143 and one
#: line, or have ended before.
SIGNALLED_ONE_IN = 10
SIGNAL_WITHIN_S = 1.5


def _signalled(case: Case, rng: random.Random) -> Case:
    stop = (signal.SIGINT, signal.SIGTERM)[rng.randrange(2)]
    after_s = round(rng.uniform(0.0, SIGNAL_WITHIN_S), 3)
    return dataclasses.replace(case, signal_after_s=after_s, stop_signal=stop)


def _is_deadlock(result: RunResult) -> bool:
    """chakra_sim's replay deadlocked: a simulation outcome (each thread and stream runs its
    nodes in the file's order, and the ranks meet at every collective), not something a
    reader trips on, so not chakra_validate's to foresee. Still one line naming the file."""
    return "error: deadlock: " in result.stderr


def fuzz_one(
    seeds: Seeds,
    format_name: str,
    rng: random.Random,
    workdir: Path,
    runner: Runner,
    *,
    timeout_s: float = 60.0,
) -> CaseReport:
    """Mutate a seed of ``format_name``, run one of its tools on it, classify. For a
    ``.et`` given to chakra_sim, chakra_validate runs first: a graph it accepts must
    simulate (a clean refusal by chakra_sim is then a failure too)."""
    fmt = FORMATS[format_name]
    candidates = seeds.by_format[format_name]
    seed = _pick(rng, [(s.weight, s) for s in candidates])
    data, mutation = fmt.mutate(seeds, seed, rng)
    shutil.rmtree(workdir, ignore_errors=True)
    inputs, out = workdir / "in", workdir / "out"
    inputs.mkdir(parents=True)
    out.mkdir()
    mutant = inputs / f"mutant{fmt.suffix}"
    mutant.write_bytes(data)
    case = dataclasses.replace(_pick(rng, fmt.tools)(mutant, seed, out, rng), timeout_s=timeout_s)
    if rng.randrange(SIGNALLED_ONE_IN) == 0:
        case = _signalled(case, rng)
    runs = []
    if format_name == "et" and case.module == "sim":
        check = Case("validate", tuple(map(str, case.inputs)), case.inputs, (), out,
                     unnamed_errors=VALIDATION_FAILED, timeout_s=timeout_s)  # fmt: skip
        runs.append(run_case(check, runner))
    result, outcome = run_case(case, runner)
    if (runs and runs[0][0].returncode == 0 and outcome.verdict is Verdict.CLEAN_ERROR
            and not _is_deadlock(result)):  # fmt: skip
        signature = "sim:validate-accepts-sim-rejects:" + normalise(outcome.reason)
        reason = f"chakra_validate accepts it, chakra_sim says {outcome.reason[:200]}"
        outcome = Outcome(Verdict.FAILURE, reason, signature)
    runs.append((result, outcome))
    return CaseReport(mutation, mutant, tuple(runs))
