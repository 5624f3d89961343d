"""A moderately large rank is written with bounded memory (streaming, no whole-trace lists)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chakra.synth.job import rank_file_names
from chakra.synth.options import SynthOptions

CHILD = """
import resource, sys
from chakra.synth import SynthOptions, generate_job
options = SynthOptions(seed=1, ranks=1, steps=2, ops_per_step=int(sys.argv[2]))
summary = generate_job(options, sys.argv[1])
print(summary.ranks[0].gpu_ops, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def generate_in_child(folder: Path, ops_per_step: int) -> tuple[int, int]:
    """GPU ops written and the child's peak RSS in KiB (Linux reports KiB)."""
    folder.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), str(ops_per_step)],
        capture_output=True,
        text=True,
        check=True,
    )
    gpu_ops, peak_kib = (int(word) for word in result.stdout.split())
    return gpu_ops, peak_kib


@pytest.mark.slow
def test_sixty_thousand_gpu_ops_in_bounded_memory(tmp_path: Path) -> None:
    small_ops, small_peak = generate_in_child(tmp_path / "small", 3000)
    gpu_ops, peak_kib = generate_in_child(tmp_path / "large", 30000)
    assert small_ops < 7_000 and gpu_ops >= 55_000
    # Ten times the ops may not cost more than a few MiB more: nothing grows with the trace.
    # (Compared with a small run of the same process, so interpreter overhead cancels out.)
    assert peak_kib - small_peak < 16 * 1024, (small_peak, peak_kib)
    tmp_path = tmp_path / "large"
    written = sum(p.stat().st_size for p in tmp_path.iterdir())
    assert written > 100 * 2**20
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [*rank_file_names(SynthOptions(), 0), "job.truth.json"]
    )
