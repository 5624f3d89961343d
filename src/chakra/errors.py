"""The one exception hierarchy of the package.

The library raises these; the command-line tools turn them into one line on stderr and exit
status 1. Every message is one sentence that names the file and, where it helps, the byte
offset or node concerned.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar, Union

PathLike = Union[str, Path]


class ChakraError(Exception):
    """Base of every error the package raises on purpose.

    Every subclass survives pickling (a worker process's error reaches its parent whole):
    the copy is rebuilt from the original's ``args`` and attributes without calling
    ``__init__``, whatever arguments a subclass's ``__init__`` takes.
    """

    def __reduce__(self) -> tuple[Callable[..., ChakraError], tuple[Any, ...]]:
        return _rebuild_error, (type(self), self.args, dict(vars(self)))


def _rebuild_error(
    kind: type[ChakraError], args: tuple[Any, ...], attributes: dict[str, Any]
) -> ChakraError:
    """The unpickled copy of a :class:`ChakraError` (see its ``__reduce__``)."""
    error = kind.__new__(kind)
    error.args = args
    vars(error).update(attributes)
    return error


class InputsFailedError(ChakraError):
    """Several inputs failed: ``message`` says how many, ``errors`` holds each one's error.
    A tool that goes through every input before it fails reports each of ``errors`` in one
    line (:func:`chakra.cli.runner.run_tool`)."""

    def __init__(self, message: str, errors: Sequence[ChakraError]) -> None:
        super().__init__(message)
        self.errors = list(errors)

    @classmethod
    def raise_any(cls, failed: Sequence[ChakraError], total: int) -> None:
        """Nothing when ``failed`` is empty; its one error when it holds one; else an
        InputsFailedError saying how many of ``total`` inputs failed."""
        if len(failed) == 1:
            raise failed[0]
        if failed:
            raise cls(f"{len(failed)} of {total} files failed", failed)


_Input = TypeVar("_Input")
_Read = TypeVar("_Read")


def read_every_input(inputs: Sequence[_Input], read: Callable[[_Input], _Read]) -> list[_Read]:
    """``read`` of each input, in order. Each is read even after another failed, so that
    one run names every bad input: their ChakraErrors are then raised together
    (:meth:`InputsFailedError.raise_any`)."""
    results: list[_Read] = []
    failed: list[ChakraError] = []
    for item in inputs:
        try:
            results.append(read(item))
        except ChakraError as exc:
            failed.append(exc)
    InputsFailedError.raise_any(failed, len(inputs))
    return results


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread of a command-line tool (see
    :func:`chakra.cli.runner.sigterm_interrupts`): a ``KeyboardInterrupt``, so that every
    clean-up that handles Ctrl-C handles it too."""


class FileAccessError(ChakraError):
    """A file cannot be opened, read or written (missing, unreadable, no such folder...)."""


class TraceFormatError(ChakraError):
    """A file's content does not follow its format.

    ``path`` is the file, ``offset`` the byte offset where the problem was found, when known;
    ``decompressed`` says the offset counts bytes of the inflated stream of a gzip file.
    """

    def __init__(
        self,
        path: PathLike,
        problem: str,
        offset: Optional[int] = None,
        *,
        decompressed: bool = False,
    ) -> None:
        self.path = str(path)
        self.problem = problem
        self.offset = offset
        kind = "decompressed byte offset" if decompressed else "byte offset"
        where = f" at {kind} {offset}" if offset is not None else ""
        super().__init__(f"{self.path}: {problem}{where}")


class EtFormatError(TraceFormatError):
    """A Chakra ET (.et) file is malformed: bad framing, truncation or undecodable message."""


class AttributeKindError(ChakraError):
    """An attribute holds a value of a kind its reader cannot accept (e.g. a string for an int)."""


class UsageError(ChakraError):
    """The command line asks for something impossible (a missing or conflicting option): the
    tools report it as argparse does, with their usage line and exit status 2."""


class WrongTraceKindError(TraceFormatError):
    """A file holds another kind of trace than the one asked for (e.g. a Kineto trace given
    where a Chakra ET is read)."""


class ArchiveError(ChakraError):
    """An archive cannot be read (truncated, corrupt, not an archive) or holds a member that
    safe extraction refuses (a link, a special file, a path leaving the target, over a size
    limit); the message names the archive and, where one is at fault, the member."""


# --- Files -----------------------------------------------------------------------------------
class OutputOverwritesInputError(ChakraError):
    """An output of a tool names one of its inputs (or two outputs name one file)."""


# --- Linking ---------------------------------------------------------------------------------
class CoverageError(ChakraError):
    """``--strict``: the link covers less than the thresholds the user asked for."""


class LinkError(ChakraError):
    """The two traces cannot be linked (wrong pairing, nothing in common, empty trace)."""


class WorkerDiedError(ChakraError):
    """A worker process of a pool ended without reporting (killed, or out of memory)."""


# --- Simulation ------------------------------------------------------------------------------
class SimulationError(ChakraError):
    """The graph cannot be simulated as given (unknown dependency, cycle, deadlock...)."""


class PlotFormatError(ChakraError):
    """A plot's path names an image format that matplotlib cannot write."""


class ScaleRuleError(ChakraError):
    """A what-if rule (``--scale TARGET[@QUALIFIER...]=FACTOR``) does not parse, or cannot
    be applied to a graph (a qualifier needs what the graph does not keep)."""


# --- Text workloads --------------------------------------------------------------------------
class TextWorkloadError(TraceFormatError):
    """A text workload cannot be parsed; the message names the file and the line."""

    def __init__(self, path: PathLike, line: Optional[int], problem: str) -> None:
        self.line = line
        where = f"line {line}: " if line is not None else ""
        super().__init__(path, f"{where}{problem}")


# --- The ET feeder ---------------------------------------------------------------------------
class FeederError(ChakraError):
    """The feeder was asked something its state cannot answer (unknown id, bad push-back...)."""


class UnknownNodeError(FeederError, KeyError):
    """A node id is not loaded: not read yet, already removed, or absent from the file.

    ``node_id`` is the id asked for. Also a ``KeyError``, as the id is a missing key.
    """

    def __init__(self, message: str, node_id: int) -> None:
        super().__init__(message)
        self.node_id = node_id

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class MissingAttributeError(FeederError):
    """A node has no "other" attribute of the requested name."""


# --- Synthetic traces ------------------------------------------------------------------------
class SynthError(ChakraError):
    """The generator could not produce a consistent job (a bug, reported as such)."""


class SynthOptionsError(ChakraError):
    """Synthetic-job options that cannot be honoured (out of range, unknown vintage...)."""


# --- Companion tools -------------------------------------------------------------------------
class ValidationFailedError(ChakraError):
    """At least one file has problems, or the files disagree across ranks."""


class VisualizerError(ChakraError):
    """The graph cannot be drawn as asked (format, selection, size or missing Graphviz)."""


class NameFilterError(ChakraError):
    """A name filter that is not a regex, or one that could take too long to match."""


class GeneratorError(ChakraError):
    """Generator options out of range."""


class TimelineError(ChakraError):
    """The input log or trace cannot be turned into a timeline."""


# --- Analyses and the notebook API -----------------------------------------------------------
class DiffError(ChakraError):
    """Two runs cannot be compared (different numbers of ranks, an input that is no run)."""


class MissingExtraError(ChakraError):
    """An optional dependency is not installed; the message names the extra to install."""


class RankOrderError(ChakraError):
    """The files given for a job do not name its ranks 0 to N-1 once each: a file's name
    and its metadata disagree on its rank, two files are one rank, a rank is missing, or
    some files carry no rank while others do."""
