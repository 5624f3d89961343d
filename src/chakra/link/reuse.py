"""A batch link rerun into the same folder reuses the ranks an earlier run proved it wrote.

Beside each rank's ET+ (``rank<r>.et_plus.json[.gz]``) a batch writes its *manifest*,
``.rank<r>.et_plus.manifest.json`` (hidden: no shell glob of the folder's traces takes it),
in the same atomic group as the ET+ and moved into place after it: the chakra version, the
options that change the output (link options, ``--strict`` thresholds, gzip or not), each
input's name, size and SHA-256 (taken before the input is read), the ET+'s name, size and
SHA-256 as written, and the rank's link report. A rerun reuses a rank only when its manifest
parses, names this version and these options, the inputs now hold the recorded bytes and the
ET+ on disk too; any other rank is linked again, with an INFO line saying why (no manifest,
manifest unreadable, options differ, inputs changed, ET+ modified...), never an error. File
times play no part. Checking costs one read of each input and ET+ (SHA-256: see
:mod:`chakra.fileio.digest`), far less than linking again. Deleting the output folder (or a
rank's manifest) gives a fresh link.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import msgspec

import chakra
from chakra.errors import ChakraError
from chakra.fileio import AtomicGroup, atomic_output
from chakra.fileio.atomic import Pending
from chakra.fileio.digest import FileDigest, named_digest, read_record, same_files
from chakra.fileio.location import Location, name_of
from chakra.link.linked_trace import LinkReport, RankResult
from chakra.link.report import missing_parts

logger = logging.getLogger(__name__)

#: The version of the code that runs (an ET+ another version wrote is linked again).
VERSION = chakra.__version__
#: Ranks named in the INFO line saying which are reused (the rest are counted).
RANKS_SHOWN = 8


class LinkManifest(msgspec.Struct, frozen=True):
    """What one rank's ET+ was made from and what it was: see the module doc."""

    chakra_version: str
    rank: int
    settings: Any  # the options that change the output, as JSON values
    inputs: tuple[FileDigest, ...]  # host, device (or the device trace alone)
    output: FileDigest
    report: LinkReport


class Proof(msgspec.Struct, frozen=True):
    """Whether a rank's ET+ can be reused: its result as stored, or why it is relinked."""

    result: Optional[RankResult]
    reason: str = ""


def manifest_path(output: Path, rank: int) -> Path:
    """The manifest of the ET+ ``output`` of ``rank``."""
    return output.parent / f".rank{rank}.et_plus.manifest.json"


def digest_inputs(inputs: Sequence[Location]) -> tuple[FileDigest, ...]:
    """The inputs' digests (to take before reading them), each named by its file name."""
    return tuple(named_digest(path, name_of(path)) for path in inputs)


def write_manifest(
    group: AtomicGroup,
    finished: Sequence[Pending],
    output: Path,
    rank: int,
    settings: Any,
    inputs: tuple[FileDigest, ...],
    report: LinkReport,
) -> None:
    """Add the manifest of ``rank`` to ``group``: ``finished`` holds its ET+ ``output``,
    finished under a temporary name (digested there), ``inputs`` the inputs' digests taken
    before they were read, ``settings`` the options that change the output."""
    written = next(temporary for temporary, path in finished if path == output)
    manifest = LinkManifest(
        VERSION, rank, settings, inputs, named_digest(Path(written), output.name), report
    )
    with atomic_output(manifest_path(output, rank), compress=False, group=group) as out:
        out.write(msgspec.json.format(msgspec.json.encode(manifest), indent=2))


def check_linked(output: Path, rank: int, inputs: Sequence[Location], settings: Any) -> Proof:
    """Whether the ET+ ``output`` of ``rank`` can be reused: see the module doc."""
    manifest_file = manifest_path(output, rank)
    if not manifest_file.exists():
        return Proof(None, "no manifest" if output.exists() else "not linked yet")
    manifest = read_record(manifest_file, LinkManifest)
    if manifest is None:
        return Proof(None, "manifest unreadable")
    if manifest.chakra_version != VERSION:
        return Proof(None, f"linked by chakra {manifest.chakra_version}, this is {VERSION}")
    if (manifest.rank, manifest.settings, manifest.output.path) != (
        rank,
        settings,
        output.name,
    ):
        return Proof(None, "options differ")
    if not same_files(manifest.inputs, inputs):
        return Proof(None, "inputs changed")
    if not output.exists():
        return Proof(None, "ET+ missing")
    if not same_files((manifest.output,), (output,)):
        return Proof(None, "ET+ modified")
    return Proof(RankResult(rank, report=manifest.report))


def reusable_result(output: Path, rank: int, inputs: Sequence[Location], settings: Any) -> Proof:
    """:func:`check_linked`, an unreadable file counting as a reason to relink (linking will
    say what is wrong, if anything); an INFO line says why a rank that was linked there
    before is linked again, and a reused partial link is warned about as when it was made."""
    try:
        proof = check_linked(output, rank, inputs, settings)
    except ChakraError as exc:
        proof = Proof(None, f"cannot check: {exc}")
    if proof.result is None:
        level = logging.DEBUG if proof.reason == "not linked yet" else logging.INFO
        logger.log(level, "rank %d: linked again (%s)", rank, proof.reason)
    elif proof.result.report is not None:
        missing = missing_parts(proof.result.report)
        if missing:
            logger.warning("%s: partial link: %s", output, "; ".join(missing))
    return proof


def say_reused(reused: Sequence[int], proofs: Sequence[Proof], output_dir: Path) -> None:
    """One INFO line: how many ranks of the batch are reused, and which (none said when the
    folder held no earlier link)."""
    if all(proof.reason == "not linked yet" for proof in proofs):
        return
    shown = ", ".join(str(rank) for rank in reused[:RANKS_SHOWN])
    more = f" and {len(reused) - RANKS_SHOWN} more" if len(reused) > RANKS_SHOWN else ""
    which = f"ET+ proven by their manifests in {output_dir}: {shown}{more}"
    if not reused:
        which = f"no manifest in {output_dir} proves its ET+"
    logger.info("reusing %d of %d ranks (%s)", len(reused), len(proofs), which)
