"""A cache of loaded graphs, so that a file simulated again is not read again.

Reading a Chakra ET into a :class:`~chakra.simulate.sim_graph.SimGraph` costs seconds per
million nodes (protobuf and a Python pass per node); the graph's columns, stored as
msgpack (:mod:`msgspec`, arrays as their bytes), decode in a fraction of that. An entry is
keyed by the SHA-256 of the file's bytes and everything else its graph depends on: this
format's version, chakra's version, the builder, the load options and the rank, so a
changed file or other options miss. Entries are plain data (no pickle: a tampered entry
cannot run code); one that fails to decode, or holds another key, is ignored and replaced.

Where: ``$CHAKRA_CACHE_DIR``, else ``$XDG_CACHE_HOME/chakra/graphs``, else
``~/.cache/chakra/graphs``; ``CHAKRA_CACHE_DIR=off`` disables it. After a store the folder
is cut to ``$CHAKRA_CACHE_MAX_BYTES`` (default 2 GiB), least recently used entries first.
A folder that cannot be written only means no cache. Only loads that logged no warning are
stored (a lenient load with problems warns each time it is read); a failed load never is.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sys
import tempfile
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, Optional

import msgspec
import numpy as np

import chakra
from chakra.errors import PathLike
from chakra.simulate.astra_graph import P2PKey
from chakra.simulate.load_checks import LoadOptions
from chakra.simulate.sim_graph import CommKey, SimGraph

logger = logging.getLogger(__name__)

#: Bumped whenever what an entry holds, or what a load builds, changes meaning.
FORMAT_VERSION = 2
#: The folder's size bound when ``CHAKRA_CACHE_MAX_BYTES`` is not set.
DEFAULT_MAX_BYTES = 2 << 30
_CHUNK_BYTES = 1 << 20
_SUFFIX = ".graph"
_OFF = "off"


class _Entry(msgspec.Struct, array_like=True):
    """One stored graph: the full key it was stored under, the graph without its
    ``names``, ``comm`` and ``source``; its names as a table of the distinct ones and each
    node's index in it (fewer strings to decode and to hold); its communication keys split
    by their exact type (a :class:`P2PKey` would otherwise decode as a plain
    :class:`CommKey`), with the order of ``comm``'s node indices."""

    key: str
    graph: SimGraph
    name_table: list[str]
    name_codes: array
    collectives: dict[int, CommKey]
    pairs: dict[int, P2PKey]
    comm_order: list[int]
    extra: bytes = b""


class Loaded(msgspec.Struct, frozen=True):
    """What :func:`cached_read` keeps of one pass over a file: its graph and ``extra``,
    bytes its caller derived from the same pass (the ranks' communication records)."""

    graph: SimGraph
    extra: bytes = b""


def _encode_array(value: Any) -> Any:
    if isinstance(value, array):
        return (value.typecode, value.tobytes())
    raise NotImplementedError(f"cannot store {type(value).__name__}")


def _decode_array(kind: type, value: Any) -> Any:
    if kind is array and isinstance(value, list) and len(value) == 2:
        typecode, data = value
        if isinstance(typecode, str) and isinstance(data, bytes):
            column = array(typecode)
            column.frombytes(data)
            return column
    raise msgspec.ValidationError(f"expected an array, got {type(value).__name__}")


_ENCODER = msgspec.msgpack.Encoder(enc_hook=_encode_array)
_DECODER = msgspec.msgpack.Decoder(_Entry, dec_hook=_decode_array)


def cache_dir() -> Optional[Path]:
    """The cache folder the environment names (see the module's docstring); None when
    ``CHAKRA_CACHE_DIR`` is ``off``."""
    configured = os.environ.get("CHAKRA_CACHE_DIR")
    if configured:
        return None if configured.strip().lower() == _OFF else Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "chakra" / "graphs"


def load_key(builder: str, options: LoadOptions) -> list[Any]:
    """What a graph depends on besides its file's bytes and rank: the builder
    (``"graph"`` or ``"astra"``) and the load options that change it."""
    checks = None
    if options.checks is not None:
        checks = msgspec.to_builtins(options.checks)
        if checks.get("comm_groups") is not None:  # a set: its order is the process's own
            checks["comm_groups"] = sorted(checks["comm_groups"])
    return [builder, options.serialize_gpu, options.lenient, checks]


def cached_load(
    path: PathLike, rank: int, key_parts: Sequence[Any], load: Callable[[], SimGraph]
) -> SimGraph:
    """The graph of ``path`` for ``rank``: from the cache when an entry for the file's
    bytes and ``key_parts`` (:func:`load_key`) is there, else ``load()``, stored when it
    logged no warning. Errors of ``load()`` pass through; the cache's own never do."""
    return cached_read(path, rank, key_parts, lambda: Loaded(load())).graph


def cached_read(
    path: PathLike, rank: int, key_parts: Sequence[Any], load: Callable[[], Loaded]
) -> Loaded:
    """:func:`cached_load` of a graph and the bytes its caller keeps beside it: ``load()``
    gives both, and an entry holds both (give ``key_parts`` that say what the bytes are)."""
    folder = cache_dir()
    if folder is None:
        return load()
    try:
        key = _key(path, rank, key_parts)
    except OSError:  # the load reports an unreadable file its own way
        return load()
    entry_path = folder / (hashlib.sha256(key.encode()).hexdigest() + _SUFFIX)
    found = _read_entry(entry_path, key)
    if found is not None:
        return found
    watch = _WarningWatch()
    with watch:
        loaded = load()
    if watch.clean and not any((loaded.graph.problem_counts or {}).values()):
        _store(folder, entry_path, key, loaded)
    return loaded


def _key(path: PathLike, rank: int, key_parts: Sequence[Any]) -> str:
    """The entry's full key: the file's digest and what else the graph depends on."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(_CHUNK_BYTES), b""):
            digest.update(chunk)
    platform = [sys.byteorder, array("q").itemsize, array("d").itemsize]
    parts = [FORMAT_VERSION, chakra.__version__, platform, list(key_parts), rank]
    return digest.hexdigest() + ":" + msgspec.json.encode(parts).decode()


def _read_entry(entry_path: Path, key: str) -> Optional[Loaded]:
    """The graph and bytes ``entry_path`` holds for ``key``; None when there is none, or it does
    not decode or holds another key (it is then replaced by the next store)."""
    try:
        data = entry_path.read_bytes()
    except OSError:
        return None
    try:
        entry = _DECODER.decode(data)
    except (msgspec.DecodeError, ValueError, TypeError) as exc:
        logger.debug("graph cache: ignoring %s, which does not decode (%s)", entry_path, exc)
        return None
    if entry.key != key:
        logger.debug("graph cache: ignoring %s, stored for another key", entry_path)
        return None
    graph = _graph_of(entry)
    if graph is None:
        logger.debug("graph cache: ignoring %s, whose columns disagree", entry_path)
        return None
    with contextlib.suppress(OSError):
        os.utime(entry_path)  # its last use, for the size bound
    return Loaded(graph, entry.extra)


def _graph_of(entry: _Entry) -> Optional[SimGraph]:
    """The graph ``entry`` holds; None when its parts do not fit together."""
    graph, count = entry.graph, len(entry.name_codes)
    keys = {**entry.collectives, **entry.pairs}
    columns = (graph.ids, graph.duration_us, graph.resource, graph.measured_start_us)
    if any(len(column) != count for column in columns) or sorted(keys) != sorted(entry.comm_order):
        return None
    if len(graph.pred_start) != count + 1 or len(graph.succ_start) != count + 1:
        return None
    table, codes = entry.name_table, entry.name_codes
    if codes.typecode != "q":
        return None
    numbers = np.frombuffer(codes, dtype=np.int64)
    if count and (numbers.min() < 0 or numbers.max() >= len(table)):
        return None
    names = list(map(table.__getitem__, entry.name_codes))
    comm = {index: keys[index] for index in entry.comm_order}
    return msgspec.structs.replace(graph, names=names, comm=comm)


def _entry(key: str, loaded: Loaded) -> Optional[_Entry]:
    """What is stored for ``loaded``; None for a graph with a key of a type this format
    does not know."""
    graph = loaded.graph
    collectives, pairs = {}, {}
    for index, comm_key in graph.comm.items():
        if type(comm_key) is CommKey:
            collectives[index] = comm_key
        elif type(comm_key) is P2PKey:
            pairs[index] = comm_key
        else:
            return None
    numbers: dict[str, int] = {}
    codes = array("q", [numbers.setdefault(name, len(numbers)) for name in graph.names])
    bare = msgspec.structs.replace(graph, names=[], comm={}, source="")
    order = list(graph.comm)
    return _Entry(key, bare, list(numbers), codes, collectives, pairs, order, loaded.extra)


def _store(folder: Path, entry_path: Path, key: str, loaded: Loaded) -> None:
    """Writes the entry (a temporary file renamed over it), then keeps the folder within
    its size bound; a folder that cannot be written is left as it is."""
    entry = _entry(key, loaded)
    if entry is None:
        return
    temporary = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=_SUFFIX)
        with os.fdopen(descriptor, "wb") as out:
            out.write(_ENCODER.encode(entry))
        os.replace(temporary, entry_path)
        temporary = None
        _trim(folder, _max_bytes(), keep=entry_path)
    except OSError as exc:
        logger.debug("graph cache: not stored in %s (%s)", folder, exc)
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _max_bytes() -> int:
    configured = os.environ.get("CHAKRA_CACHE_MAX_BYTES", "")
    try:
        return int(configured) if configured else DEFAULT_MAX_BYTES
    except ValueError:
        logger.debug("graph cache: CHAKRA_CACHE_MAX_BYTES=%r is not a number", configured)
        return DEFAULT_MAX_BYTES


def _trim(folder: Path, max_bytes: int, keep: Path) -> None:
    """Removes the least recently used entries (not ``keep``) while the folder's entries
    hold more than ``max_bytes``."""
    entries = []
    for path in folder.glob("*" + _SUFFIX):
        try:
            status = path.stat()
        except OSError:  # removed by another process meanwhile
            continue
        entries.append((status.st_mtime, status.st_size, path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries, key=lambda e: (e[0], str(e[2]))):
        if total <= max_bytes:
            break
        if path == keep:
            continue
        try:
            path.unlink()
        except OSError:
            continue
        total -= size


class _WarningWatch(logging.Handler):
    """While entered, notes whether chakra logged a warning or worse; ``clean`` is False
    too when warnings are not being logged (``--log-level ERROR``), since a load then
    cannot tell whether it would have warned."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.clean = True
        self._logger = logging.getLogger(chakra.__name__)

    def emit(self, record: logging.LogRecord) -> None:
        self.clean = False

    def __enter__(self) -> _WarningWatch:
        if not self._logger.isEnabledFor(logging.WARNING):
            self.clean = False
        self._logger.addHandler(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._logger.removeHandler(self)
