"""Side by side: a revision of this repository (A) against the working tree (B), same inputs.

    .venv/bin/python benchmarks/compare.py REV [--repeats 3] [--only link convert ...]
        [--json OUT.json] [--inputs DIR] [--link-mb 50] [--sim-nodes 500000 1000000]
        [--pipeline-ranks 8] [--pipeline-ops 2000] [--help-repeats 10]

A is revision REV (``git archive``) installed into a throwaway venv in a temporary folder; B
is the working tree's own ``.venv`` (``make .venv/.installed``). A's venv borrows B's
dependencies: it is made ``--without-pip``, a ``.pth`` file appends B's site-packages to its
path, and ``python -m pip install --no-deps --no-build-isolation --no-index`` builds REV with
B's pip and setuptools. This works offline, takes seconds, and runs both sides on the very
same numpy, msgspec and protobuf, so the ratios are the code's. Only when REV needs a
dependency B lacks (``pip check`` fails) does it install REV's dependencies from the index.

The inputs are made once, by B's ``chakra_synth``, ``chakra_trace_link`` and
``chakra_converter`` (``--inputs DIR`` keeps them for the next call), and both sides read the
same files:

- link: one synthetic rank whose host ET + Kineto trace are about ``--link-mb`` MB;
- convert: that rank's ET+ (linked by B);
- simulate: ``chakra_sim`` on converted ``.et`` files of about ``--sim-nodes`` nodes (each a
  synthetic rank sized from the link rank's nodes per op; the table gives the exact count),
  each run with an empty graph cache (cold: a first simulation), and again as ``warm``: each
  side's runs share a cache that one untimed run filled (a rerun of ``chakra_sim`` on the
  same file, other what-ifs; a revision without the cache reads the file every time);
- pipeline: ``chakra_pipeline --trace-dir ... -j 2`` on a ``--pipeline-ranks``-rank job;
- ranks: ``chakra_sim`` on the ``.et`` files of that job's ranks together (made once by B's
  ``chakra_pipeline``), cold and warm as for simulate;
- help: ``--help`` of every console script in pyproject.toml's [project.scripts], and
  ``python -c pass`` by the same interpreter; each script's time over it is printed and those
  over 5x are flagged.

Each run is a fresh process, A and B interleaved (A B A B ...), its output in a fresh folder
deleted afterwards (untimed); both sides' chakra packages are byte-compiled first (B's
editable ``src`` would otherwise be compiled again by every run under PYTHONDONTWRITEBYTECODE,
A's was by pip). Per run: wall time, CPU time (user + sys) and peak RSS, both
from ``os.wait4`` (the child and the processes it waited for; the peak is the largest single
process's, not a sum, for the pipeline's workers). Printed per workload: the median and
spread (min-max) of each for A and B, and B/A of the medians (below 1: B is faster or
smaller). Inputs go to a temporary folder under $TMPDIR unless ``--inputs``: about 0.6 GB at
the default sizes (each simulate rank's traces deleted once converted; 1.5 GB at the peak).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORKLOADS = ("link", "convert", "simulate", "ranks", "pipeline", "help")
HELP_LIMIT_RATIO = 5.0
# chakra_synth's host ET + Kineto bytes per unit of --ops-per-step (2 steps), measured.
TRACE_BYTES_PER_OP = 6_720


@dataclass(frozen=True)
class Side:
    """One side of the comparison: the bin folder of a venv with chakra installed."""

    label: str
    bin_dir: Path

    def tool(self, name: str) -> str:
        return str(self.bin_dir / name)


@dataclass(frozen=True)
class Run:
    """One process's measurements."""

    wall_s: float
    cpu_s: float
    peak_rss_mib: float


@dataclass
class Case:
    """One command line measured on both sides; ``<tool>`` words are resolved per side."""

    workload: str
    name: str
    argv: list[str]
    note: str = ""
    runs: dict[str, list[Run]] = field(default_factory=lambda: {"A": [], "B": []})
    #: each side's runs share one graph cache, filled by an untimed run first (chakra_sim's
    #: rerun on the same file); otherwise each run starts with an empty cache (cold)
    warm: bool = False


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="git revision of this repository to compare against (A)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per side (default 3)")
    parser.add_argument("--help-repeats", type=int, default=10, help="runs per --help (10)")
    parser.add_argument("--only", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--json", type=Path, help="also write every run as JSON here")
    parser.add_argument("--inputs", type=Path, help="keep the generated inputs here (reused)")
    parser.add_argument("--venv-b", type=Path, default=REPO / ".venv", help="B's venv")
    parser.add_argument("--link-mb", type=float, default=50.0)
    parser.add_argument("--sim-nodes", type=int, nargs="*", default=[500_000, 1_000_000])
    parser.add_argument("--pipeline-ranks", type=int, default=8)
    parser.add_argument("--pipeline-ops", type=int, default=2_000, help="GPU ops per step")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.help_repeats < 1:
        parser.error("--repeats and --help-repeats must be at least 1")
    return args


def resolve_commit(rev: str) -> str:
    result = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"compare.py: {rev!r} is not a commit of {REPO}")
    return result.stdout.strip()


def working_tree_state() -> str:
    """B's HEAD commit, with ``+changes`` when the tracked files differ from it."""
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "diff", "--quiet", "HEAD"], check=False)
    return head + ("+changes" if dirty.returncode else "")


def install_revision(commit: str, folder: Path, venv_b: Path) -> Side:
    """Install ``commit`` into a new venv under ``folder``, borrowing B's dependencies."""
    source, venv = folder / "source", folder / "venv"
    source.mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", str(REPO), "archive", commit], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(source)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"compare.py: git archive {commit} failed")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    own = Path(subprocess.check_output([str(python), "-c", purelib], text=True).strip())
    borrowed = subprocess.check_output([str(venv_b / "bin" / "python"), "-c", purelib], text=True)
    (own / "compare_borrowed_dependencies.pth").write_text(borrowed)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run(
        [*pip, "--no-deps", "--no-build-isolation", "--no-index", str(source)], check=True
    )
    check = subprocess.run([str(python), "-m", "pip", "check"], capture_output=True, check=False)
    if check.returncode != 0:
        print("A needs dependencies B lacks: installing them from the index", file=sys.stderr)
        subprocess.run([*pip, "--no-build-isolation", str(source)], check=True)
    return Side("A", venv / "bin")


def precompile(side: Side) -> None:
    """Write the bytecode of ``side``'s chakra package before any run is timed.

    Under PYTHONDONTWRITEBYTECODE (this machine sets it) an editable install (B) would compile
    every module it imports on every run, while pip precompiled A's: a set-up cost, not code.
    """
    where = "import chakra, os; print(os.path.dirname(chakra.__file__))"
    package = subprocess.check_output([side.tool("python"), "-c", where], text=True).strip()
    subprocess.run([side.tool("python"), "-m", "compileall", "-q", package], check=True)


def project_scripts() -> list[str]:
    """The console scripts in the working tree's pyproject.toml [project.scripts]."""
    names, inside = [], False
    for line in (REPO / "pyproject.toml").read_text().splitlines():
        if line.startswith("["):
            inside = line.strip() == "[project.scripts]"
        elif inside and "=" in line and not line.lstrip().startswith("#"):
            names.append(line.split("=", 1)[0].strip())
    return names


def run_once(argv: list[str], workdir: Path, cache: Path | None = None) -> Run:
    """Run one command to its end in ``workdir``; its wall, CPU and peak RSS. ``cache``:
    the graph cache folder it uses (None: a new empty one in ``workdir``, a cold cache)."""
    env = {**os.environ, "CHAKRA_CACHE_DIR": str(cache or workdir / "graph-cache")}
    with tempfile.TemporaryFile() as stderr:
        start = time.perf_counter()
        child = subprocess.Popen(
            argv, cwd=workdir, stdout=subprocess.DEVNULL, stderr=stderr, env=env
        )
        _, status, usage = os.wait4(child.pid, 0)
        wall_s = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            stderr.seek(0)
            tail = stderr.read().decode(errors="replace")[-2000:]
            raise SystemExit(f"compare.py: {' '.join(argv)} exited {child.returncode}:\n{tail}")
    return Run(wall_s, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def run_tool(side: Side, name: str, *args: str) -> str:
    """Run one of ``side``'s console scripts to make an input; its stdout."""
    result = subprocess.run(
        [side.tool(name), *args, "--log-level", "WARNING"],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"compare.py: {name} {' '.join(args)} failed:\n{result.stderr[-2000:]}")
    return result.stdout


def command(template: str, **paths: object) -> list[str]:
    """``template``'s words, each formatted with ``paths`` (split first: paths may hold spaces).

    ``<tool>`` words stand for each side's console script, ``<out>`` for the run's folder.
    """
    return [word.format(**paths) for word in template.split()]


def synth_job(side: Side, folder: Path, ranks: int, ops_per_step: int) -> Path:
    template = "--output-dir {folder} --ranks {ranks} --seed 1 --ops-per-step {ops}"
    run_tool(side, "chakra_synth", *command(template, folder=folder, ranks=ranks, ops=ops_per_step))
    return folder


def link_and_convert(side: Side, job: Path, et_plus: Path, et: Path) -> int:
    """Link and convert rank 0 of ``job``; the node count of the ``.et`` written."""
    link = "--host-trace {job}/rank0.host_et.json --device-trace {job}/rank0.kineto.json"
    run_tool(side, "chakra_trace_link", *command(link, job=job), "--output-file", str(et_plus))
    run_tool(side, "chakra_converter", "PyTorch", "--input", str(et_plus), "--output", str(et))
    return json.loads(run_tool(side, "chakra_trace_info", "--json", str(et)))["nodes"]


def trace_mb(job: Path) -> float:
    files = (job / "rank0.host_et.json", job / "rank0.kineto.json")
    return sum(path.stat().st_size for path in files) / 1e6


def make_inputs(side: Side, folder: Path, args: argparse.Namespace) -> dict:
    """Generate (or reuse) every input; a manifest of their paths, sizes and node counts."""
    sizes = {
        key: getattr(args, key)
        for key in ("link_mb", "sim_nodes", "pipeline_ranks", "pipeline_ops")
    }
    manifest_path = folder / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest["sizes"] != sizes:
            raise SystemExit(
                f"compare.py: {folder} holds inputs of other sizes ({manifest['sizes']})"
            )
        print(f"reusing the inputs in {folder}", file=sys.stderr)
        return manifest
    elif folder.exists() and any(folder.iterdir()):
        raise SystemExit(f"compare.py: {folder} is not empty and holds no inputs of compare.py")
    print(f"generating the inputs in {folder} (B's tools)", file=sys.stderr)
    link_ops = max(100, round(args.link_mb * 1e6 / TRACE_BYTES_PER_OP))
    link_job = synth_job(side, folder / "link", 1, link_ops)
    link_nodes = link_and_convert(
        side, link_job, folder / "rank0.et_plus.json", folder / "link_rank0.et"
    )
    manifest = {
        "sizes": sizes,
        "link_job": str(link_job),
        "link_mb": trace_mb(link_job),
        "et_plus": str(folder / "rank0.et_plus.json"),
        "simulate": [],
    }
    for target in args.sim_nodes:
        manifest["simulate"].append(make_sim_input(side, folder, target, link_nodes / link_ops))
    pipeline_folder = folder / f"pipeline{args.pipeline_ranks}"
    synth_job(side, pipeline_folder, args.pipeline_ranks, args.pipeline_ops)
    manifest["pipeline_job"] = str(pipeline_folder)
    manifest_path.write_text(json.dumps(manifest, indent=1))
    return manifest


def add_rank_files(side: Side, folder: Path, manifest: dict) -> dict:
    """The pipeline job's ``.et`` files (B's ``chakra_pipeline``), added to ``manifest``
    (and its file in ``folder``) when missing: inputs made by an older compare.py lack them."""
    if "rank_ets" in manifest:
        return manifest
    out = folder / "rank_ets"
    shutil.rmtree(out, ignore_errors=True)
    job = manifest["pipeline_job"]
    run_tool(side, "chakra_pipeline", "--trace-dir", job, "--output-dir", str(out), "-j", "2")
    ets = sorted(out.glob("workload.*.et"), key=lambda p: int(p.name.split(".")[1]))
    for path in out.iterdir():
        if path not in ets:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    info = (json.loads(run_tool(side, "chakra_trace_info", "--json", str(et))) for et in ets)
    manifest["rank_ets"] = [str(et) for et in ets]
    manifest["rank_nodes"] = sum(document["nodes"] for document in info)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def make_sim_input(side: Side, folder: Path, target_nodes: int, nodes_per_op: float) -> dict:
    """A converted ``.et`` of about ``target_nodes`` nodes (its traces deleted afterwards)."""
    job = folder / f"sim{target_nodes}"
    synth_job(side, job, 1, max(100, round(target_nodes / nodes_per_op)))
    et = job / "rank0.et"
    nodes = link_and_convert(side, job, job / "rank0.et_plus.json", et)
    for kind in ("host_et", "kineto", "et_plus", "truth"):
        (job / f"rank0.{kind}.json").unlink()
    return {"target_nodes": target_nodes, "nodes": nodes, "et": str(et)}


def build_cases(manifest: dict, only: Sequence[str]) -> list[Case]:
    """The measured command lines, on the inputs of ``manifest``."""
    log = " --log-level WARNING"
    # The reference's spellings of the trace options: older revisions take only those.
    link = "<chakra_trace_link> --chakra-host-trace {job}/rank0.host_et.json"
    link += " --chakra-device-trace {job}/rank0.kineto.json --output-file <out>/rank0.et_plus.json"
    # The log level before the subcommand: older revisions take it only there.
    convert = "<chakra_converter>" + log + " PyTorch --input {et_plus} --output <out>/rank0.et"
    pipeline = "<chakra_pipeline> --trace-dir {job} --output-dir <out>/results -j 2"
    et_plus_mb = Path(manifest["et_plus"]).stat().st_size / 1e6
    cases = [
        Case("link", "link", command(link + log, job=manifest["link_job"]),
             f"{manifest['link_mb']:.0f} MB"),
        Case("convert", "convert", command(convert, et_plus=manifest["et_plus"]),
             f"{et_plus_mb:.0f} MB ET+"),
        *(Case("simulate", f"simulate {sim['target_nodes'] / 1e6:g}M{' warm' if warm else ''}",
               command("<chakra_sim> {et}" + log, et=sim["et"]),
               f"{sim['nodes']:,} nodes", warm=warm)
          for sim in manifest["simulate"] for warm in (False, True)),
        Case("pipeline", "pipeline", command(pipeline + log, job=manifest["pipeline_job"]),
             f"{manifest['sizes']['pipeline_ranks']} ranks"),
        *(Case("ranks", f"sim {len(manifest.get('rank_ets', []))} ranks{' warm' if warm else ''}",
               ["<chakra_sim>", *manifest.get("rank_ets", []), *log.split()],
               f"{manifest.get('rank_nodes', 0):,} nodes", warm=warm)
          for warm in (False, True)),
    ]  # fmt: skip
    return [case for case in cases if case.workload in only]


def help_cases(scripts: Sequence[str]) -> list[Case]:
    cases = [Case("help", "python -c pass", ["<python>", "-c", "pass"])]
    return cases + [Case("help", name, [f"<{name}>", "--help"]) for name in scripts]


def resolve(argv: list[str], side: Side, out: Path) -> list[str] | None:
    """``argv`` for ``side``: ``<tool>`` its script, ``<out>`` the run's folder; None if absent."""
    resolved = []
    for arg in argv:
        if arg.startswith("<") and arg.endswith(">") and arg != "<out>":
            tool = side.bin_dir / arg[1:-1]
            if not tool.exists():
                return None
            arg = str(tool)
        resolved.append(arg.replace("<out>", str(out)))
    return resolved


def measure(cases: Sequence[Case], sides: Sequence[Side], repeats: int, scratch: Path) -> None:
    """Run every case ``repeats`` times per side, A B A B..., each in a fresh output folder."""
    for case in cases:
        caches = {side.label: _warm_cache(case, side, scratch) for side in sides}
        for repeat in range(repeats):
            for side in sides:
                out = Path(tempfile.mkdtemp(dir=scratch))
                argv = resolve(case.argv, side, out)
                if argv is not None:
                    case.runs[side.label].append(run_once(argv, out, caches[side.label]))
                shutil.rmtree(out)
            if case.workload != "help":
                print(f"  {case.name}: run {repeat + 1}/{repeats} done", file=sys.stderr)


def _warm_cache(case: Case, side: Side, scratch: Path) -> Path | None:
    """For a warm case, a graph cache folder of ``side`` filled by one untimed run; else None."""
    if not case.warm:
        return None
    cache = Path(tempfile.mkdtemp(dir=scratch, prefix=f"cache-{side.label}-"))
    out = Path(tempfile.mkdtemp(dir=scratch))
    argv = resolve(case.argv, side, out)
    if argv is not None:
        run_once(argv, out, cache)
    shutil.rmtree(out)
    return cache


def summary(values: Sequence[float], digits: int) -> str:
    """Median and (min-max) spread."""
    if not values:
        return "-"
    median = statistics.median(values)
    return f"{median:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def ratio(case: Case, metric: str) -> str:
    a, b = ([getattr(run, metric) for run in case.runs[label]] for label in ("A", "B"))
    if not a or not b:
        return "-"
    return f"{statistics.median(b) / statistics.median(a):.2f}"


def print_workloads(cases: Sequence[Case]) -> None:
    header = f"{'workload':14s} {'input':>16s} side {'wall s':>22s} {'cpu s':>22s}"
    print(header + f" {'peak RSS MiB':>19s}")
    metrics = (("wall_s", 2, 22), ("cpu_s", 2, 22), ("peak_rss_mib", 0, 19))
    for case in cases:
        for label in ("A", "B"):
            runs = case.runs[label]
            cells = [f"{summary([getattr(r, m) for r in runs], d):>{w}s}" for m, d, w in metrics]
            first = f"{case.name:14s} {case.note:>16s}" if label == "A" else " " * 31
            print(f"{first} {label:>4s} {' '.join(cells)}")
        cells = [f"{ratio(case, m):>{w}s}" for m, _, w in metrics]
        print(f"{'':31s} {'B/A':>4s} {' '.join(cells)}")


def print_help_table(cases: Sequence[Case]) -> None:
    """Each script's median --help wall over the same interpreter's ``python -c pass``."""
    floor = {label: statistics.median(r.wall_s for r in cases[0].runs[label]) for label in "AB"}
    print(
        f"\n{'--help of':28s} {'A wall s':>9s} {'x pass':>7s} {'B wall s':>9s} {'x pass':>7s}"
        f" {'B/A':>5s}"
    )
    for case in cases:
        cells = []
        for label in ("A", "B"):
            runs = case.runs[label]
            if not runs:
                cells.append(f"{'-':>9s} {'-':>7s}")
                continue
            over = statistics.median(r.wall_s for r in runs) / floor[label]
            flag = "!" if over > HELP_LIMIT_RATIO else " "
            cells.append(f"{statistics.median(r.wall_s for r in runs):9.3f} {over:6.1f}{flag}")
        print(f"{case.name:28s} {' '.join(cells)} {ratio(case, 'wall_s'):>5s}")
    print(f"(x pass: over python -c pass of the same venv; ! over {HELP_LIMIT_RATIO:g}x)")


def write_json(path: Path, header: dict, cases: Sequence[Case]) -> None:
    rows = [
        {
            "workload": c.workload,
            "name": c.name,
            "input": c.note,
            "runs": {label: [asdict(run) for run in runs] for label, runs in c.runs.items()},
        }
        for c in cases
    ]
    path.write_text(json.dumps({**header, "cases": rows}, indent=1) + "\n")


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    commit = resolve_commit(args.rev)
    side_b = Side("B", args.venv_b / "bin")
    if not (side_b.bin_dir / "chakra_sim").exists():
        raise SystemExit(f"compare.py: no chakra in {args.venv_b} (make .venv/.installed)")
    header = {
        "rev": args.rev,
        "a_commit": commit,
        "b_commit": working_tree_state(),
        "repeats": args.repeats,
        "load_before": os.getloadavg(),
    }
    with tempfile.TemporaryDirectory(prefix="chakra-compare-") as temp:
        temp_path = Path(temp)
        side_a = install_revision(commit, temp_path / "a", args.venv_b)
        workload_names = [name for name in args.only if name != "help"]
        cases = []
        if workload_names:
            inputs = args.inputs or temp_path / "inputs"
            manifest = make_inputs(side_b, inputs.resolve(), args)
            if "ranks" in workload_names:
                manifest = add_rank_files(side_b, inputs.resolve(), manifest)
            cases = build_cases(manifest, workload_names)
        helps = help_cases(project_scripts()) if "help" in args.only else []
        scratch = temp_path / "runs"
        scratch.mkdir()
        for side in (side_a, side_b):
            precompile(side)
        measure(cases, (side_a, side_b), args.repeats, scratch)
        measure(helps, (side_a, side_b), args.help_repeats, scratch)
    header["load_after"] = os.getloadavg()
    b_commit = header["b_commit"]
    print(
        f"A = {args.rev} ({commit[:10]}), B = working tree ({b_commit[:10]}{b_commit[40:]}),"
        f" {args.repeats} runs each ({args.help_repeats} of --help); load average"
        f" {header['load_before'][0]:.2f} before, {header['load_after'][0]:.2f} after"
    )
    print_workloads(cases)
    if helps:
        print_help_table(helps)
    if args.json:
        write_json(args.json, header, cases + helps)


if __name__ == "__main__":
    main()
