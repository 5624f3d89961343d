"""Resident memory of the running process (Linux), for the benchmark scripts in this folder
(they run as scripts, so this folder is on their import path)."""

from __future__ import annotations


def current_rss_mib() -> float:
    """The current resident set size, MiB (0 where /proc is missing)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0
