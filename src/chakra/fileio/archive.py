"""Extracting a tar archive nobody vouches for, safely on every Python we support.

Our own checks decide, member by member, before anything of it is written; ``extractall``
is never called, so nothing depends on the Python having tarfile's extraction filters:

* only regular files and folders: symbolic and hard links, devices, FIFOs and any other
  kind of member are refused;
* every name is relative, without ``..`` or a NUL byte, so it resolves inside the target;
* no set-user-ID or set-group-ID bit; files are written 0644 (0755 when the member is
  executable by its owner) and folders 0755, less the umask; owners and times are not
  restored (every file is dated by its extraction);
* at most :class:`ExtractLimits` members, bytes per member, bytes in all, and bytes per byte
  of the archive (the compression ratio: 200 by default, a gzip bomb reaches 1,000; the
  first 64 MiB are always allowed), each checked on the member's header, before any of its
  bytes is written; an extended header (pax, GNU long name) over 1 MiB is refused before
  tarfile reads it into memory;
* the target folder is created by the extraction itself (it must not exist), and every
  folder and file in it is made through descriptors relative to it, never following a
  link (``O_NOFOLLOW``), every file created new (``O_EXCL``): no path can lead outside,
  even if something else changes the tree meanwhile, and a member appearing twice is
  refused.

Where tarfile has extraction filters (Python 3.12+, 3.8.17+, 3.9.17+, 3.10.12+, 3.11.4+),
its ``data`` filter judges every member too, as a second layer. After the last member, a
compressed archive is read on to its end (at most 1 MiB more), so that a truncated or
corrupt gzip, bzip2 or xz stream is refused by its own check. A plain tar cut exactly at a
member boundary reads as a shorter archive: tar has no check that would say otherwise.

Any refusal or failure raises :class:`~chakra.errors.ArchiveError` naming the archive (and
the member) and removes the target folder. Needs a POSIX system (descriptor-relative
``open`` and ``mkdir``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tarfile
import zlib
from pathlib import Path, PureWindowsPath
from typing import Any

import msgspec

from chakra.errors import ArchiveError, PathLike
from chakra.fileio.regular import open_regular

try:
    import lzma

    _LZMA_ERRORS: tuple[type[Exception], ...] = (lzma.LZMAError,)
except ImportError:  # a Python built without lzma: tarfile cannot read xz either
    _LZMA_ERRORS = ()

GiB = 1 << 30
CHUNK_BYTES = 1 << 20
#: Extended headers (pax, GNU long names) are read into memory whole; refused above this.
MAX_HEADER_BYTES = 1 << 20
#: How much of a compressed stream is read past the tar's end to reach its end check.
DRAIN_BYTES = 1 << 20

_READ_ERRORS = (tarfile.TarError, EOFError, OSError, ValueError, zlib.error, *_LZMA_ERRORS)
_EXTENDED = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE,
             tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)  # fmt: skip
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class ExtractLimits(msgspec.Struct, frozen=True):
    """The most an archive may hold: members, bytes of one member, bytes in all (as
    extracted), and bytes extracted per byte of the archive file (``max_ratio``; up to
    ``ratio_floor_bytes`` in all are allowed whatever the ratio). The defaults fit a bundle
    of real traces (a Kineto trace of a few GB; JSON traces compress 7 to 45 times, with
    xz, and ASTRA-sim workload graphs up to 96 times). ``options``: the option that raises
    each limit, by field name, named in the refusal (a tool's command line)."""

    max_total_bytes: int = 16 * GiB
    max_member_bytes: int = 4 * GiB
    max_members: int = 10_000
    max_ratio: float = 200.0
    ratio_floor_bytes: int = 64 << 20
    options: dict[str, str] = {}

    def raised_by(self, field: str) -> str:
        """``", OPTION raises it"`` for a limit with an option, else ``""``."""
        option = self.options.get(field)
        return f", {option} raises it" if option else ""


#: The limits used when none are given.
DEFAULT_LIMITS = ExtractLimits()


class Extracted(msgspec.Struct, frozen=True):
    """Where an archive went, and how many files, folders and bytes it held."""

    root: Path
    files: int
    folders: int
    total_bytes: int


class _RefusedError(Exception):
    """A member refused while tarfile reads its header (reported with the archive's name)."""


class _BoundedTarInfo(tarfile.TarInfo):
    """A header that refuses an oversized extended header before tarfile reads it whole."""

    def _proc_member(self, owner: Any) -> Any:  # tarfile's private hook, in every 3.x
        if self.type in _EXTENDED and self.size > MAX_HEADER_BYTES:
            raise _RefusedError(
                f"an extended header of {_shown(self.size)} (over the limit of "
                f"{_shown(MAX_HEADER_BYTES)})"
            )
        return super()._proc_member(owner)


def extract_archive(
    archive: PathLike, target: PathLike, limits: ExtractLimits = DEFAULT_LIMITS
) -> Extracted:
    """Extract the tar archive ``archive`` (plain, gzip, bzip2 or xz) into the new folder
    ``target`` (created, with its parents; it must not exist), after the checks of the
    module doc; raises ArchiveError, leaving no ``target``, on any refusal or failure."""
    archive, target = Path(archive), Path(target)
    if not {os.open, os.mkdir} <= os.supports_dir_fd:
        raise ArchiveError(f"{archive}: safe extraction needs a POSIX system")
    root = _make_target(archive, target)
    try:
        files, folders, total = _extract_members(archive, target, root, limits)
    except BaseException:
        os.close(root)
        shutil.rmtree(target, ignore_errors=True)
        raise
    os.close(root)
    return Extracted(target, files, folders, total)


def _make_target(archive: Path, target: Path) -> int:
    """Create ``target`` and return a descriptor of it."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(target, 0o755)
        return os.open(target, _FOLDER_FLAGS)
    except FileExistsError:
        raise ArchiveError(
            f"{archive}: cannot extract into {target}: it exists already "
            "(extraction makes a new folder)"
        ) from None
    except OSError as exc:
        raise ArchiveError(f"{archive}: cannot create {target}: {_why(exc)}") from exc


def _extract_members(
    archive: Path, target: Path, root: int, limits: ExtractLimits
) -> tuple[int, int, int]:
    """Check and extract every member in turn; (files, folders, bytes)."""
    files = folders = total = 0
    try:
        with (
            open_regular(archive) as raw,
            tarfile.open(fileobj=raw, mode="r:*", tarinfo=_BoundedTarInfo) as tar,
        ):
            archive_bytes = os.fstat(raw.fileno()).st_size
            for count, member in enumerate(tar, 1):
                if count > limits.max_members:
                    raise ArchiveError(
                        f"{archive}: more than {limits.max_members} members (the limit"
                        f"{limits.raised_by('max_members')})"
                    )
                parts = _checked_parts(archive, member, limits)
                _second_layer(archive, member, target)
                if member.isdir():
                    os.close(_open_folder(root, parts, archive, member.name))
                    folders += 1
                    continue
                total += member.size
                _check_total(archive, member.name, total, archive_bytes, limits)
                _extract_file(tar, member, root, parts, archive)
                files += 1
            _drain(tar.fileobj)
    except _RefusedError as exc:
        raise ArchiveError(f"{archive}: {exc}") from None
    except _READ_ERRORS as exc:
        raise ArchiveError(f"{archive}: {_read_problem(exc)}") from None
    return files, folders, total


def _check_total(
    archive: Path, name: str, total: int, archive_bytes: int, limits: ExtractLimits
) -> None:
    """Refuse the member ``name`` that takes the bytes extracted to ``total``, over the
    limit in all or over ``max_ratio`` times the archive's ``archive_bytes``."""
    if total > limits.max_total_bytes:
        raise ArchiveError(
            f"{archive}: more than {_shown(limits.max_total_bytes)} in all (the limit"
            f"{limits.raised_by('max_total_bytes')})"
        )
    allowed = max(limits.ratio_floor_bytes, limits.max_ratio * archive_bytes)
    if total > allowed:
        raise ArchiveError(
            f"{archive}: member {name!r} takes what it holds to {_shown(total)}, over "
            f"{limits.max_ratio:g} times the archive's {_shown(archive_bytes)} (the limit on "
            f"the compression ratio{limits.raised_by('max_ratio')}): a compression bomb?"
        )


def _checked_parts(archive: Path, member: tarfile.TarInfo, limits: ExtractLimits) -> list[str]:
    """The member's path inside the target, as names; raises ArchiveError if refused."""
    name = member.name
    where = f"{archive}: member {name!r}"
    if "\0" in name:
        raise ArchiveError(f"{where}: a NUL byte in its name")
    kind = _special_kind(member)
    if kind:
        raise ArchiveError(f"{where}: {kind} (only regular files and folders are extracted)")
    if member.mode & (stat.S_ISUID | stat.S_ISGID):
        raise ArchiveError(f"{where}: a set-user-ID or set-group-ID bit")
    if name.startswith(("/", "\\")) or PureWindowsPath(name).drive:
        raise ArchiveError(f"{where}: an absolute path")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ArchiveError(f"{where}: a path leaving the folder ('..')")
    if not parts and not member.isdir():
        raise ArchiveError(f"{where}: a file without a name")
    if member.isreg() and member.size > limits.max_member_bytes:
        raise ArchiveError(
            f"{where}: {_shown(member.size)}, over the limit of "
            f"{_shown(limits.max_member_bytes)} a member{limits.raised_by('max_member_bytes')}"
        )
    return parts


def _special_kind(member: tarfile.TarInfo) -> str:
    """What the member is if not a regular file or folder, else ""."""
    for test, kind in ((member.issym, "a symbolic link"), (member.islnk, "a hard link"),
                       (member.ischr, "a character device"), (member.isblk, "a block device"),
                       (member.isfifo, "a FIFO")):  # fmt: skip
        if test():
            return kind
    if member.isreg() or member.isdir():
        return ""
    return f"a member of tar type {member.type!r}"


def _second_layer(archive: Path, member: tarfile.TarInfo, target: Path) -> None:
    """tarfile's own ``data`` filter, where this Python has it."""
    data_filter = getattr(tarfile, "data_filter", None)
    if data_filter is None:
        return
    try:
        data_filter(member, str(target))
    except tarfile.TarError as exc:  # FilterError and its kinds
        raise ArchiveError(
            f"{archive}: member {member.name!r}: refused by tarfile's data filter ({exc})"
        ) from None


def _open_folder(root: int, parts: list[str], archive: Path, name: str) -> int:
    """A descriptor of the folder ``parts`` under ``root``, made where missing, never
    through a link."""
    folder = os.dup(root)
    try:
        for part in parts:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=folder)
            inner = os.open(part, _FOLDER_FLAGS, dir_fd=folder)
            os.close(folder)
            folder = inner
    except OSError as exc:
        os.close(folder)
        raise ArchiveError(
            f"{archive}: member {name!r}: cannot make its folder ({_why(exc)})"
        ) from None
    return folder


def _extract_file(
    tar: tarfile.TarFile, member: tarfile.TarInfo, root: int, parts: list[str], archive: Path
) -> None:
    """Write the regular member into a new file (never through a link)."""
    folder = _open_folder(root, parts[:-1], archive, member.name)
    mode = 0o755 if member.mode & stat.S_IXUSR else 0o644
    try:
        out = os.open(parts[-1], _FILE_FLAGS, mode, dir_fd=folder)
    except FileExistsError:
        raise ArchiveError(
            f"{archive}: member {member.name!r}: appears twice (or as a file and a folder)"
        ) from None
    except OSError as exc:
        raise ArchiveError(f"{archive}: cannot write member {member.name!r}: {_why(exc)}") from None
    finally:
        os.close(folder)
    try:
        _copy(tar.extractfile(member), out, member.size, f"{archive}: member {member.name!r}")
    finally:
        os.close(out)


def _copy(source: Any, out: int, size: int, where: str) -> None:
    """Copy exactly ``size`` bytes of ``source`` to the descriptor ``out``."""
    left = size
    while left > 0:
        chunk = source.read(min(CHUNK_BYTES, left))
        if not chunk:
            raise ArchiveError(f"{where}: cut short (the archive is truncated)")
        view = memoryview(chunk)
        while view:
            try:
                written = os.write(out, view)
            except OSError as exc:
                raise ArchiveError(f"{where}: cannot write it ({_why(exc)})") from None
            view = view[written:]
        left -= len(chunk)


def _drain(stream: Any) -> None:
    """Read on to the end of a compressed stream (its end check), at most DRAIN_BYTES."""
    left = DRAIN_BYTES
    while left > 0:
        chunk = stream.read(min(CHUNK_BYTES, left))
        if not chunk:
            return
        left -= len(chunk)


def _read_problem(exc: BaseException) -> str:
    """One line saying why an archive cannot be read."""
    text = " ".join(str(exc).split())
    if isinstance(exc, OSError) and exc.errno is not None:  # the file system's, not gzip's
        return f"cannot read it: {_why(exc)}"
    if isinstance(exc, tarfile.ReadError) and "could not be opened" in text:
        return "not a tar archive (plain, gzip, bzip2 or xz)"
    if isinstance(exc, UnicodeError) or (isinstance(exc, ValueError) and "null" in text):
        return f"a malformed header ({text})"
    return f"truncated or corrupt ({text or type(exc).__name__})"


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _shown(size: int) -> str:
    """A byte count for people: ``512 bytes``, ``3.5 MiB``, ``16.0 GiB``."""
    for unit, scale in (("GiB", GiB), ("MiB", 1 << 20), ("KiB", 1024)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"
