"""``run_pipeline``: link and convert every rank (in worker processes), then simulate them
together and write the report, timeline and plot.

Output folder layout::

    rank<r>.et_plus.json   linked host + device trace
    rank<r>.et             Chakra ET graph
    report.json            per rank: link coverage, conversion counts, simulated vs measured
    timeline.json          simulated (and measured) schedule, Chrome/Perfetto JSON
    utilisation.png        GPU stream utilisation over time, simulated vs measured
"""

from __future__ import annotations

import json
import logging
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Optional

import msgspec

from chakra.convert import convert_file
from chakra.errors import ChakraError
from chakra.fileio import atomic_output
from chakra.link import LinkOptions
from chakra.link.batch import link_files
from chakra.simulate.analysis import critical_path
from chakra.simulate.result import RankResult, rank_results
from chakra.simulate.run import chrome_trace, simulate_files

logger = logging.getLogger(__name__)


class RankFiles(msgspec.Struct, frozen=True):
    rank: int
    host: Path
    device: Path


class PipelineResult(msgspec.Struct, frozen=True):
    """Per-rank results and where the outputs are."""

    output_dir: Path
    ranks: list[dict[str, Any]]
    timeline: Path
    plot: Optional[Path]
    report: Path


def _link_and_convert(job: tuple[RankFiles, Path, LinkOptions]) -> dict[str, Any]:
    files, folder, options = job
    et_plus = folder / f"rank{files.rank}.et_plus.json"
    et = folder / f"rank{files.rank}.et"
    link = link_files(files.host, files.device, et_plus, options)
    conversion = convert_file(et_plus, et)
    return {
        "rank": files.rank, "et_plus": str(et_plus), "et": str(et),
        "link": msgspec.to_builtins(link), "convert": msgspec.to_builtins(conversion),
    }  # fmt: skip


def _progress(total: int) -> Any:
    """A tqdm bar on a terminal, else None."""
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc="link + convert", unit="rank", file=sys.stderr)


def _prepare(ranks: list[RankFiles], folder: Path, options: LinkOptions, jobs: int) -> list:
    work = [(files, folder, options) for files in ranks]
    bar = _progress(len(work))
    results = []
    if jobs <= 1:
        for job in work:
            results.append(_link_and_convert(job))
            if bar is not None:
                bar.update()
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for future in as_completed([pool.submit(_link_and_convert, job) for job in work]):
                results.append(future.result())
                if bar is not None:
                    bar.update()
    if bar is not None:
        bar.close()
    return sorted(results, key=lambda r: r["rank"])


def run_pipeline(
    ranks: list[RankFiles],
    output_dir: Path,
    *,
    jobs: int = 1,
    options: Optional[LinkOptions] = None,
    plot: bool = True,
) -> PipelineResult:
    """Run every stage for ``ranks`` (simulated together, so collectives meet) and write
    the outputs; raises ChakraError naming the rank and file at the first failure."""
    if not ranks:
        raise ChakraError("no ranks to process")
    output_dir.mkdir(parents=True, exist_ok=True)
    prepared = _prepare(ranks, output_dir, options or LinkOptions(), jobs)
    engine = simulate_files([Path(r["et"]) for r in prepared])
    results: list[RankResult] = rank_results(engine)
    for r, (entry, result) in enumerate(zip(prepared, results)):
        entry["simulation"] = msgspec.to_builtins(result)
        entry["critical_path"] = [list(item) for item in critical_path(engine, r)]
    timeline = output_dir / "timeline.json"
    with atomic_output(timeline, text=True) as out:
        json.dump(chrome_trace(engine, compare=True), out)
    picture = None
    if plot:
        from chakra.simulate.plot import plot_utilisation

        picture = output_dir / "utilisation.png"
        plot_utilisation(engine, picture)
    report = output_dir / "report.json"
    with atomic_output(report, text=True) as out:
        json.dump({"ranks": prepared}, out, indent=2, sort_keys=True)
    return PipelineResult(output_dir, prepared, timeline, picture, report)


def summary_table(result: PipelineResult) -> str:
    """One line per rank: coverage, nodes, simulated vs measured makespan."""
    rows = ["rank  host ops linked  GPU ops linked    nodes   simulated us    measured us   error"]
    for entry in result.ranks:
        link, simulation = entry["link"], entry["simulation"]
        matched = sum(link["matched"].values())
        nodes = sum(entry["convert"]["nodes_by_type"].values())
        measured = simulation["measured_makespan_us"]
        error = simulation["error_pct"]
        gpu_total = link["gpu_ops_total"] - link["gpu_ops_outside_window"]
        tail = f"{measured:>14,.0f} {error:+7.2f}%" if measured is not None else f"{'-':>14}"
        rows.append(
            f"{entry['rank']:>4}  {matched:>7}/{link['host_ops']:<7} "
            f"{link['gpu_ops_linked']:>6}/{gpu_total:<7} {nodes:>8} "
            f"{simulation['simulated_makespan_us']:>14,.0f} {tail}"
        )
    return "\n".join(rows)
