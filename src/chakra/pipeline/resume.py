"""Resuming an interrupted run by content: a rank is reused only when the outputs it left are
the ones this package wrote, from the same inputs, with the same version and options.

Each rank's ``rank<r>.report.json`` is its *manifest*, written atomically after its two other
outputs: the chakra version, the link and convert options, each input's name (relative to
the folder of the job's inputs: :mod:`chakra.pipeline.naming`), size and SHA-256 (taken
before the input is read, so an input replaced during the run does not match on the next),
each output's name, size and SHA-256 as written (``rank<r>.et_plus.json`` and
``PREFIX.<r>.et``, the latter again after the cross-rank step rewrites it), and the rank's
link and convert reports. Names, not paths: the manifest does not depend on where the output
folder is, and resuming never compares them. A rank is reused only when its manifest parses
and the version and options match, the current inputs have the recorded sizes then digests,
and the outputs on disk have the recorded sizes then digests. Anything else recomputes the
rank, with one INFO line saying why: no manifest (outputs that some other program put there,
e.g. shipped in an archive), options differ, inputs changed, outputs modified, and so on.

File times play no part: a trace replaced by an older-dated copy (``cp -p``, ``rsync -a``,
``tar x``) is a changed input, and a touched but identical one is not. Checking costs one
read of each input and output (SHA-256 streams at about 1.3 GB/s per core; see
:mod:`chakra.fileio.digest`), far less than linking and converting them again. The folder and
inputs may be URLs (see :mod:`chakra.fileio.location`); they are read the same way.

What this does not stop: someone who can write the output folder while the run writes it, or
who forges a manifest together with the outputs it describes (the manifest is not signed).
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any, Optional

import msgspec

import chakra
from chakra.errors import ChakraError
from chakra.fileio import atomic_output
from chakra.fileio.digest import FileDigest, named_digest, read_record, same_files
from chakra.fileio.location import Location, join, missing, name_of
from chakra.pipeline.fresh import FinishedWork
from chakra.pipeline.option_values import ET_PREFIX

logger = logging.getLogger(__name__)


#: The version of the code that runs (not the installed distribution's metadata, which may
#: describe another checkout than the one imported).
VERSION = chakra.__version__
_MANIFEST = re.compile(r"^rank(\d+)\.report\.json$")


class Manifest(msgspec.Struct, frozen=True):
    """What one rank's outputs were made from and what they were: see the module doc."""

    chakra_version: str
    options: Any
    inputs: tuple[FileDigest, ...]  # host, device (or the device trace alone)
    outputs: tuple[FileDigest, ...]  # et_plus, et
    entry: dict[str, Any]


class Verdict(msgspec.Struct, frozen=True):
    """Whether a rank can be reused: its stored report entry, or why it is recomputed."""

    entry: Optional[dict[str, Any]]
    reason: str = ""


def rank_outputs(
    folder: Location, rank: int, et_prefix: str = ET_PREFIX
) -> tuple[Location, Location, Location]:
    """``(et_plus, et, report)`` locations of one rank in the output folder."""
    return (
        join(folder, f"rank{rank}.et_plus.json"),
        join(folder, f"{et_prefix}.{rank}.et"),
        join(folder, f"rank{rank}.report.json"),
    )


def digest_inputs(inputs: tuple[Location, ...], labels: tuple[str, ...]) -> tuple[FileDigest, ...]:
    """The inputs' digests, to take before reading them for :func:`write_rank_report`, each
    named by its label (:func:`chakra.pipeline.naming.input_labels`)."""
    return tuple(named_digest(path, label) for path, label in zip(inputs, labels))


def _output_digest(output: Location) -> FileDigest:
    """The digest of a file of the output folder, named by its name."""
    return named_digest(output, name_of(output))


def write_rank_report(
    path: Location,
    entry: dict[str, Any],
    options: Any,
    inputs: tuple[FileDigest, ...],
    outputs: tuple[Location, ...],
) -> None:
    """Store one rank's manifest (atomically, after its ``outputs`` are complete): its
    report ``entry``, the ``options`` and ``inputs`` (digests) that made it, and the
    digests of ``outputs`` (et_plus, et) as they are now."""
    manifest = Manifest(
        VERSION,
        msgspec.to_builtins(options),
        inputs,
        tuple(_output_digest(output) for output in outputs),
        entry,
    )
    with atomic_output(path, compress=False) as out:
        out.write(msgspec.json.format(msgspec.json.encode(manifest), indent=2))


def note_rewritten(folder: Location, ranks: list[int], et_prefix: str = ET_PREFIX) -> None:
    """Record in their manifests the new digest of the ``.et`` files of ``ranks``, which the
    cross-rank step has just rewritten; a rank without a readable manifest is left as it is
    (it will be recomputed)."""
    for rank in ranks:
        _, et, report = rank_outputs(folder, rank, et_prefix)
        manifest = read_record(report, Manifest)
        if manifest is None or len(manifest.outputs) != 2:
            continue
        outputs = (manifest.outputs[0], _output_digest(et))
        with atomic_output(report, compress=False) as out:
            updated = msgspec.structs.replace(manifest, outputs=outputs)
            out.write(msgspec.json.format(msgspec.json.encode(updated), indent=2))


def check_rank(
    folder: Location,
    rank: int,
    inputs: tuple[Location, ...],
    options: Any,
    et_prefix: str = ET_PREFIX,
) -> Verdict:
    """Whether ``rank`` can be reused from ``folder``: see the module doc. ``options``: the
    link and convert options, anything msgspec turns into JSON."""
    et_plus, et, report = rank_outputs(folder, rank, et_prefix)
    absent = missing([et_plus, et, report])
    if len(absent) == 3:
        return Verdict(None, "not computed yet")
    manifest = read_record(report, Manifest) if report not in absent else None
    if manifest is None:
        return Verdict(None, "no manifest" if report in absent else "manifest unreadable")
    if manifest.chakra_version != VERSION:
        return Verdict(None, f"made by chakra {manifest.chakra_version}, this is {VERSION}")
    if manifest.options != msgspec.to_builtins(options) or manifest.entry.get("rank") != rank:
        return Verdict(None, "options differ")
    if not same_files(manifest.inputs, inputs):
        return Verdict(None, "inputs changed")
    if absent:
        return Verdict(None, "outputs missing")
    if not same_files(manifest.outputs, (et_plus, et)):
        return Verdict(None, "outputs modified")
    entry = dict(manifest.entry)
    entry["et_plus"], entry["et"] = name_of(et_plus), name_of(et)
    return Verdict(entry)


def reusable_entry(
    folder: Location,
    rank: int,
    inputs: tuple[Location, ...],
    options: Any,
    et_prefix: str = ET_PREFIX,
) -> Optional[dict[str, Any]]:
    """The stored report entry of ``rank`` if :func:`check_rank` reuses it, else None (with
    an INFO line saying why, unless the rank was never computed there)."""
    try:
        verdict = check_rank(folder, rank, inputs, options, et_prefix)
    except ChakraError as exc:  # an output or input unreadable: linking will say, if need be
        verdict = Verdict(None, f"cannot check: {exc}")
    if verdict.entry is None:
        level = logging.DEBUG if verdict.reason == "not computed yet" else logging.INFO
        logger.log(level, "rank %d: recomputed (%s)", rank, verdict.reason)
    return verdict.entry


def comm_groups_name(et_prefix: str = ET_PREFIX) -> str:
    """The name of the ``.et`` family's comm-group file (ASTRA-sim's
    ``--comm-group-configuration``)."""
    return f"{et_prefix}.comm_groups.json"


def finished_work(folder: Path, et_prefix: str = ET_PREFIX) -> FinishedWork:
    """What a failed or interrupted run keeps in ``folder`` (:mod:`chakra.pipeline.fresh`):
    every rank whose manifest was committed (written after its outputs, so they were too),
    with the outputs it names, and the comm-group file, committed with the ``.et`` family
    once every rank was done. Nothing is digested here: the rerun checks each rank by
    content before reusing it."""
    names: set[str] = set()
    ranks = []
    for entry in os.scandir(folder):
        match = _MANIFEST.match(entry.name)
        manifest = read_record(Path(entry.path), Manifest) if match else None
        if match is None or manifest is None or len(manifest.outputs) != 2:
            continue
        ranks.append(int(match[1]))
        names.update([entry.name, *(output.path for output in manifest.outputs)])
    if not ranks:
        return FinishedWork()
    shown = ", ".join(str(rank) for rank in sorted(ranks)[:8])
    more = f" and {len(ranks) - 8} more" if len(ranks) > 8 else ""
    what = f"rank{'s' if len(ranks) > 1 else ''} {shown}{more} (ET+, .et and manifest)"
    groups = comm_groups_name(et_prefix)
    if (folder / groups).is_file():
        names.add(groups)
        what += f" and {groups}"
    return FinishedWork(frozenset(names), what)
