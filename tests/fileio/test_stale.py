"""Temporaries name their writer; those of writers gone on this machine are removed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chakra.fileio import AtomicFile
from chakra.fileio.stale import (
    host_tag,
    remove_own_temporaries,
    remove_stale_temporaries,
    temporary_prefix,
)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="only POSIX systems are swept")


def _dead_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_a_temporary_names_this_host_and_process(tmp_path: Path) -> None:
    output = AtomicFile(tmp_path / "a.json")
    name = Path(output.temporary).name
    assert name.startswith(f".a.json.{host_tag()}-{os.getpid()}.") and name.endswith(".partial")
    output.discard()
    assert list(tmp_path.iterdir()) == []


def test_a_long_name_is_shortened_in_its_temporary(tmp_path: Path) -> None:
    long = "n" * 250 + ".et"
    output = AtomicFile(tmp_path / long)
    output.stream.write(b"x")
    output.commit()
    assert [p.name for p in tmp_path.iterdir()] == [long]


def test_only_the_temporaries_of_dead_writers_here_are_removed(tmp_path: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        names = {
            "dead": f"{temporary_prefix('x.et', _dead_pid())}r1.partial",
            "live": f"{temporary_prefix('x.et', sleeper.pid)}r2.partial",
            "mine": f"{temporary_prefix('x.et', os.getpid())}r3.partial",
            "elsewhere": f".x.et.{'0' * 8}-{_dead_pid()}.r4.partial",
            "unknown": ".x.et.0123456789ab.partial",
            "not_partial": f"{temporary_prefix('x.et', _dead_pid())}r5.tmp",
        }
        for name in names.values():
            (tmp_path / name).write_text("")
        if host_tag() == "0" * 8:  # pragma: no cover - one chance in 4 billion
            pytest.skip("this host's tag is the one used for another host")
        assert remove_stale_temporaries(tmp_path) == 1
        left = {p.name for p in tmp_path.iterdir()}
        assert left == set(names.values()) - {names["dead"]}
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_missing_folder_has_nothing_to_sweep(tmp_path: Path) -> None:
    assert remove_stale_temporaries(tmp_path / "missing") == 0


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="zombies seen through /proc")
def test_the_temporary_of_an_exited_unreaped_writer_is_removed(tmp_path: Path) -> None:
    """A writer that has exited but is not reaped yet (a zombie: its pid still answers
    ``kill(pid, 0)``) writes nothing more: its temporary is stale too."""
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while Path(f"/proc/{zombie.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        stale = tmp_path / f"{temporary_prefix('x.et', zombie.pid)}r1.partial"
        stale.write_text("")
        assert remove_stale_temporaries(tmp_path) == 1
        assert list(tmp_path.iterdir()) == []
    finally:
        zombie.wait()


def test_own_temporaries_of_the_named_outputs_are_removed_and_nothing_else(
    tmp_path: Path,
) -> None:
    """A live owner's temporaries (which no sweep takes for stale) go when asked, for the
    outputs named only; other owners', other outputs' and finished files stay."""
    mine = {name: tmp_path / f"{temporary_prefix(name, os.getpid())}x1.partial"
            for name in ("a.json", ".a.manifest.json", "b.json")}  # fmt: skip
    other_owner = tmp_path / f"{temporary_prefix('a.json', _dead_pid())}x2.partial"
    for path in [*mine.values(), other_owner]:
        path.write_bytes(b"x")
    (tmp_path / "a.json.partial").write_bytes(b"not a temporary's name")
    (tmp_path / "a.json").write_bytes(b"done")
    remove_own_temporaries(tmp_path, ["a.json", ".a.manifest.json"], os.getpid())
    left = sorted(path.name for path in tmp_path.iterdir())
    assert left == sorted([mine["b.json"].name, other_owner.name, "a.json.partial", "a.json"])
