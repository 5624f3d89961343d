"""What the views cost a pipeline run at job scale: a synthetic job of N ranks (default 64,
100 ops per step, ``chakra_synth``) through ``run_pipeline`` with every output, timed by
stage in one process.

*Views* are what exists only to show the replay: each rank's views (typed critical path,
stream idle, steps, and the slack replays behind the bound headline: ``rank_reports``) and
the job's files (``timeline.json``, ``utilisation.png``, ``report.json``, ``report.html``:
``write_outputs`` less its what-if runs). The rest is linking, converting, cross-rank
agreement, the replay and the what-ifs. Issue 31's target: the views add at most 20% to
the rest (``views / rest``); issue 35's: they take at most 10% of the pipeline's wall time
on 8 ranks x 2,000 ops per step, ``-j 2`` (``views / pipeline``). The time of each view's
file is printed too.

    python benchmarks/views_cost.py [--ranks 64] [--ops-per-step 100] [--jobs 2]
    python benchmarks/views_cost.py --ranks 8 --ops-per-step 2000   # issue 35's job
"""

from __future__ import annotations

import argparse
import functools
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

#: (module, function): timed where the pipeline looks them up
TIMED = (
    ("chakra.pipeline.run", "rank_reports"),
    ("chakra.pipeline.run", "write_outputs"),
    ("chakra.pipeline.outputs", "run_scenarios"),
    ("chakra.pipeline.outputs", "write_timeline"),
    ("chakra.pipeline.timeline_file", "chrome_trace"),
    ("chakra.pipeline.outputs", "dump_finite"),
    ("chakra.pipeline.outputs", "_plot"),
    ("chakra.pipeline.outputs", "write_report_html"),
    ("chakra.pipeline.outputs", "busy_series"),
)


def _timed(spent: dict[str, float], name: str, function: Callable) -> Callable:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - began

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--ops-per-step", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (-j)")
    args = parser.parse_args()

    import importlib

    from chakra.pipeline import RankFiles, run_pipeline
    from chakra.synth import SynthOptions, generate_job

    spent: dict[str, float] = defaultdict(float)
    for module_name, name in TIMED:
        module = importlib.import_module(module_name)
        setattr(module, name, _timed(spent, name, getattr(module, name)))
    with tempfile.TemporaryDirectory(prefix="chakra-views-") as scratch:
        folder = Path(scratch)
        options = SynthOptions(seed=5, ranks=args.ranks, ops_per_step=args.ops_per_step)
        summary = generate_job(options, folder / "traces")
        ranks = [RankFiles(r.rank, r.host_et, r.kineto) for r in summary.ranks]
        began = time.perf_counter()
        run_pipeline(ranks, folder / "out", jobs=args.jobs)
        total = time.perf_counter() - began
        sizes = {p.name: p.stat().st_size for p in (folder / "out").iterdir() if p.is_file()}
    files = spent["write_outputs"] - spent["run_scenarios"]
    views = spent["rank_reports"] + files
    rest = total - views
    print(f"{args.ranks} ranks x {args.ops_per_step} ops/step, -j {args.jobs}: "
          f"pipeline {total:.1f} s")  # fmt: skip
    print(f"  views   {views:6.1f} s  = {100 * views / rest:.0f}% of the rest (target <= 20%), "
          f"{100 * views / total:.0f}% of the pipeline (target <= 10%)")  # fmt: skip
    print(f"  rest    {rest:6.1f} s  (link, convert, agreement, replay, what-ifs "
          f"{spent['run_scenarios']:.1f} s)")  # fmt: skip
    print(f"  rank views (incl. slack replays)  {spent['rank_reports']:.2f} s")
    timeline_mb = max(sizes.get("timeline.json", 0), sizes.get("timeline.json.gz", 0)) / 1e6
    print(
        f"  timeline {spent['write_timeline']:.2f} s (build {spent['chrome_trace']:.2f} s, "
        f"{timeline_mb:.1f} MB), report.json {spent['dump_finite']:.2f} s"
    )
    print(f"  utilisation.png {spent['_plot']:.2f} s")
    print(
        f"  report.html {spent['write_report_html']:.2f} s "
        f"({sizes.get('report.html', 0) / 1e6:.2f} MB), busy bands {spent['busy_series']:.2f} s"
    )


if __name__ == "__main__":
    main()
