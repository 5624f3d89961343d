"""A moderately large rank is written with bounded memory (streaming, no whole-trace lists)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from chakra.synth.job import rank_file_names
from chakra.synth.options import SynthOptions

CHILD = """
import resource, sys
from chakra.synth import SynthOptions, generate_job
summary = generate_job(SynthOptions(seed=1, ranks=1, steps=2, ops_per_step=30000), sys.argv[1])
print(summary.ranks[0].gpu_ops, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def test_sixty_thousand_gpu_ops_in_bounded_memory(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)], capture_output=True, text=True, check=True
    )
    gpu_ops, peak_kib = (int(word) for word in result.stdout.split())
    assert gpu_ops >= 55_000
    assert peak_kib < 150 * 1024  # Linux reports KiB
    written = sum(p.stat().st_size for p in tmp_path.iterdir())
    assert written > 100 * 2**20
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [*rank_file_names(SynthOptions(), 0), "job.truth.json"]
    )
