"""Integration test over a bundle of per-rank traces: link -> convert -> simulate every rank,
then check each rank's simulated time against the expected one.

Reference-compatible flags::

    python ci_tools/integration_tests.py --tgz_path bundle.tgz --num_ranks 2 \\
        --tolerance 0.05 --expected_times_ms 3.3 3.4
    python ci_tools/integration_tests.py --tgz_path bundle.tgz --num_ranks 2 \\
        --tolerance 0.01 --expected-from-measured

The archive is not trusted. It is extracted by :func:`chakra.fileio.archive.extract_archive`
(regular files and folders only, every name inside the folder, no links, special files or
set-ID bits, at most --max-members members, --max-member-gb a member, --max-extract-gb in
all and --max-ratio bytes per byte of the archive beyond the first 64 MiB, each checked on a
member's header before its bytes are written) into ``traces/`` of a new work folder, and
every rank is computed afresh into its ``outputs/`` with the pipeline's resume off: outputs
shipped in the archive, or left by an earlier run, are never taken as results. The work
folder is a new temporary folder, removed at the end, unless ``--work-dir`` names one (new,
or empty; not a symbolic link), which is kept. Each rank ``r`` needs a host trace and a
Kineto trace, named as the reference does (``chakra_host_et_<r>.json``, ``kineto_<r>.json``)
or as ``chakra_synth`` writes them (``rank<r>.host_et.json``, ``rank<r>.kineto.json``),
optionally ``.gz``, anywhere inside the archive. Exit status 0 when every rank is within the
tolerance, 1 otherwise (with a table) or on an error (one line: ``integration_tests: error:
...``), 2 for usage errors.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Optional

from chakra.errors import ChakraError
from chakra.fileio.archive import DEFAULT_LIMITS, ExtractLimits, GiB, extract_archive
from chakra.pipeline import RankFiles, run_pipeline

HOST_NAMES = ("chakra_host_et_{r}.json", "rank{r}.host_et.json")
DEVICE_NAMES = ("kineto_{r}.json", "rank{r}.kineto.json")
Row = tuple[int, float, Optional[float], bool]
#: The option that raises each limit of the extraction, named when it refuses an archive.
LIMIT_OPTIONS = {
    "max_total_bytes": "--max-extract-gb",
    "max_member_bytes": "--max-member-gb",
    "max_members": "--max-members",
    "max_ratio": "--max-ratio",
}


def find_trace(root: Path, patterns: tuple[str, ...], rank: int, what: str) -> Path:
    names = {p.format(r=rank) + suffix for p in patterns for suffix in ("", ".gz")}
    found = sorted(p for p in root.rglob("*") if p.name in names)
    if not found:
        shown = " or ".join(sorted(names))
        raise ChakraError(f"rank {rank}: no {what} in {root} (looked for {shown})")
    return found[0]


def work_folder(given: Optional[str]) -> tuple[Path, bool]:
    """The work folder and whether to keep it: a new temporary one, or ``given`` (created,
    or an existing empty folder that is not a symbolic link)."""
    if given is None:
        return Path(tempfile.mkdtemp(prefix="chakra-integration-")), False
    folder = Path(given)
    if folder.is_symlink():
        raise ChakraError(f"--work-dir {folder}: a symbolic link; give a real folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if any(folder.iterdir()):
            raise ChakraError(f"--work-dir {folder}: not empty; give a new or empty folder")
    except OSError as exc:
        raise ChakraError(f"--work-dir {folder}: {exc.strerror or exc}") from exc
    return folder, True


def fresh_folder(folder: Path) -> Path:
    """Create ``folder``, which must not exist (nor be a link)."""
    try:
        os.mkdir(folder)
    except OSError as exc:
        raise ChakraError(f"cannot create {folder}: {exc.strerror or exc}") from exc
    return folder


def check(args: argparse.Namespace, work: Path) -> tuple[list[Row], Path]:
    archive = Path(args.tgz_path)
    if not archive.is_file():
        raise ChakraError(f"{archive}: no such archive")
    limits = ExtractLimits(
        int(args.max_extract_gb * GiB),
        int(args.max_member_gb * GiB),
        args.max_members,
        args.max_ratio,
        options=LIMIT_OPTIONS,
    )
    root = extract_archive(archive, work / "traces", limits).root
    ranks = [RankFiles(r, find_trace(root, HOST_NAMES, r, "host trace"),
                       find_trace(root, DEVICE_NAMES, r, "Kineto trace"))
             for r in range(args.num_ranks)]  # fmt: skip
    jobs = max(1, min(args.num_ranks, os.cpu_count() or 1))
    output = fresh_folder(work / "outputs")
    result = run_pipeline(ranks, output, jobs=jobs, plot=False, resume=False)
    rows = []
    for entry in result.ranks:
        simulated_ms = entry.simulation.simulated_makespan_us / 1000
        if args.expected_from_measured:
            measured = entry.simulation.measured_makespan_us
            expected = None if measured is None else measured / 1000
        else:
            expected = args.expected_times_ms[entry.rank]
        ok = expected is not None and abs(simulated_ms - expected) <= args.tolerance * expected
        rows.append((entry.rank, simulated_ms, expected, ok))
    return rows, output


def parse_args(argv: Optional[list[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tgz_path", required=True)
    parser.add_argument("--num_ranks", type=int, required=True)
    parser.add_argument("--tolerance", type=float, required=True, help="relative, e.g. 0.05")
    parser.add_argument("--expected_times_ms", type=float, nargs="+")
    parser.add_argument("--expected-from-measured", action="store_true",
                        help="compare with each rank's measured time instead")  # fmt: skip
    parser.add_argument(
        "--work-dir",
        help="keep the extracted traces and the outputs here (a new or empty folder); "
        "default: a temporary one, removed at the end",
    )
    limits = parser.add_argument_group("limits on the archive")
    limits.add_argument(
        "--max-extract-gb",
        type=float,
        default=DEFAULT_LIMITS.max_total_bytes / GiB,
        help="most GiB it may extract to, in all (default: %(default)s)",
    )
    limits.add_argument(
        "--max-member-gb",
        type=float,
        default=DEFAULT_LIMITS.max_member_bytes / GiB,
        help="most GiB of one file (default: %(default)s)",
    )
    limits.add_argument(
        "--max-members",
        type=int,
        default=DEFAULT_LIMITS.max_members,
        help="most files and folders (default: %(default)s)",
    )
    limits.add_argument(
        "--max-ratio",
        type=float,
        default=DEFAULT_LIMITS.max_ratio,
        help="most bytes extracted per byte of the archive, beyond the first "
        f"{DEFAULT_LIMITS.ratio_floor_bytes >> 20} MiB (default: %(default)s; a gzip bomb "
        "reaches 1000)",
    )
    args = parser.parse_args(argv)
    if not args.expected_from_measured and (
        not args.expected_times_ms or len(args.expected_times_ms) != args.num_ranks
    ):
        parser.error("give one --expected_times_ms per rank, or --expected-from-measured")
    if not min(args.max_extract_gb, args.max_member_gb, args.max_members, args.max_ratio) > 0:
        parser.error(
            "--max-extract-gb, --max-member-gb, --max-members and --max-ratio must be positive"
        )
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    try:
        work, keep = work_folder(args.work_dir)
        try:
            rows, output = check(args, work)
        finally:
            if not keep:
                shutil.rmtree(work, ignore_errors=True)
    except ChakraError as exc:
        print(f"integration_tests: error: {exc}", file=sys.stderr)
        return 1
    print(f"{'rank':>4} {'simulated ms':>13} {'expected ms':>12}  result")
    for rank, simulated, expected, ok in rows:
        shown = f"{expected:12.3f}" if expected is not None else f"{'-':>12}"
        print(f"{rank:>4} {simulated:13.3f} {shown}  {'ok' if ok else 'MISMATCH'}")
    failed = [row for row in rows if not row[3]]
    kept = f"outputs in {output}" if keep else "outputs removed; --work-dir keeps them"
    print(f"{len(rows) - len(failed)} passed, {len(failed)} failed (tolerance "
          f"{args.tolerance:.1%}; {kept})")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
