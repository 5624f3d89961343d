"""ASTRA-sim text workloads: the vocabulary and a pure parser into frozen values.

Format (reference §7.1): line 1 holds the parallelism type (``HYBRID_DLRM`` and
``HYBRID_DLRM_ENHANCED`` add the index of the last bottom-MLP layer as a second token), line 2
the number of layers, and every further line one layer of 12 whitespace-separated columns::

    name reserved fwd_us fwd_comm fwd_bytes ig_us ig_comm ig_bytes wg_us wg_comm wg_bytes update

Unlike the reference, blank lines and ``#`` comments are skipped, the declared layer count must
match the layers present, unknown comm types are errors, and every error names the line.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional

from chakra.errors import PathLike, TextWorkloadError
from chakra.et.schema import CollectiveCommType


class Parallelism(str, enum.Enum):
    """The parallelism types of ASTRA-sim text workloads that the converter expands."""

    MICRO = "MICRO"
    DATA = "DATA"
    MODEL = "MODEL"
    HYBRID_DATA_MODEL = "HYBRID_DATA_MODEL"
    HYBRID_MODEL_DATA = "HYBRID_MODEL_DATA"
    HYBRID_DLRM = "HYBRID_DLRM"
    HYBRID_DLRM_ENHANCED = "HYBRID_DLRM_ENHANCED"


#: Comm-type strings of the text format -> Chakra collective; ``NONE`` means no collective.
COMM_TYPES: dict[str, Optional[CollectiveCommType]] = {
    "ALLREDUCE": CollectiveCommType.ALL_REDUCE,
    "ALLTOALL": CollectiveCommType.ALL_TO_ALL,
    "ALLGATHER": CollectiveCommType.ALL_GATHER,
    "REDUCESCATTER": CollectiveCommType.REDUCE_SCATTER,
    "NONE": None,
}
DLRM_TYPES = frozenset({Parallelism.HYBRID_DLRM, Parallelism.HYBRID_DLRM_ENHANCED})
LAYER_COLUMNS = 12
_PHASE_COLUMNS = {"fwd": 2, "ig": 5, "wg": 8}


@dataclass(frozen=True)
class Phase:
    """One phase of a layer: compute time in microseconds, then its collective (if any).

    ``comm_type`` is the string as written (it names the collective node); ``comm_size_bytes``
    is the collective's payload.
    """

    comp_us: int
    comm_type: str
    comm_size_bytes: int

    @property
    def collective(self) -> Optional[CollectiveCommType]:
        """The Chakra collective of this phase, None for ``NONE``."""
        return COMM_TYPES[self.comm_type]


@dataclass(frozen=True)
class Layer:
    """One layer line: forward, input-gradient and weight-gradient phases."""

    name: str
    fwd: Phase
    ig: Phase
    wg: Phase
    update_time: str
    line: int


@dataclass(frozen=True)
class Workload:
    """A parsed text workload; ``last_bottom_layer`` is set for the DLRM types only."""

    parallelism: Parallelism
    last_bottom_layer: Optional[int]
    declared_layers: int
    layers: tuple[Layer, ...]


def _content_lines(text: str) -> list[tuple[int, list[str]]]:
    """(1-based line number, tokens) of every line with content once ``#`` comments go."""
    lines = []
    for number, raw in enumerate(text.splitlines(), start=1):
        tokens = raw.split("#", 1)[0].split()
        if tokens:
            lines.append((number, tokens))
    return lines


#: Input limits (docs/formats.md): sizes (and counts) below 2^63, what an int64 holds;
#: compute times (µs) within 2^62 ns, so that the simulator's sums in ns still fit.
MAX_INTEGER = 2**63 - 1
MAX_TIME_US = 2**62 // 1000


def _integer(path: PathLike, line: int, what: str, token: str, limit: int = MAX_INTEGER) -> int:
    """``token`` as an int from 0 to ``limit``, or a :class:`TextWorkloadError` naming
    ``what``."""
    try:
        value = int(token)
    except ValueError:
        raise TextWorkloadError(path, line, f"{what} {token!r} is not an integer") from None
    if value < 0:
        raise TextWorkloadError(path, line, f"{what} {value} is negative")
    if value > limit:
        raise TextWorkloadError(path, line, f"{what} {value} is more than {limit:,}")
    return value


def _phase(path: PathLike, line: int, kind: str, columns: list[str]) -> Phase:
    """The ``kind`` phase (fwd, ig or wg) of a layer line."""
    start = _PHASE_COLUMNS[kind]
    comp, comm, size = columns[start : start + 3]
    if comm not in COMM_TYPES:
        known = ", ".join(COMM_TYPES)
        raise TextWorkloadError(
            path, line, f"unknown {kind} comm type {comm!r} (expected one of {known})"
        )
    return Phase(
        comp_us=_integer(path, line, f"{kind} compute time", comp, MAX_TIME_US),
        comm_type=comm,
        comm_size_bytes=_integer(path, line, f"{kind} comm size", size),
    )


def parse_layer(path: PathLike, line: int, columns: list[str]) -> Layer:
    """One layer from the whitespace-separated ``columns`` of line ``line``."""
    if len(columns) != LAYER_COLUMNS:
        raise TextWorkloadError(
            path, line, f"a layer needs {LAYER_COLUMNS} columns, found {len(columns)}"
        )
    return Layer(
        name=columns[0],
        fwd=_phase(path, line, "fwd", columns),
        ig=_phase(path, line, "ig", columns),
        wg=_phase(path, line, "wg", columns),
        update_time=columns[11],
        line=line,
    )


def _header(path: PathLike, tokens: list[str], line: int) -> tuple[Parallelism, Optional[int]]:
    """The parallelism type and, for DLRM, the last bottom layer, from the first line."""
    try:
        parallelism = Parallelism(tokens[0])
    except ValueError:
        known = ", ".join(p.value for p in Parallelism)
        raise TextWorkloadError(
            path, line, f"unsupported parallelism type {tokens[0]!r} (expected one of {known})"
        ) from None
    if parallelism not in DLRM_TYPES:
        return parallelism, None
    if len(tokens) < 2:
        raise TextWorkloadError(
            path, line, f"{parallelism.value} needs the last bottom layer after the type"
        )
    return parallelism, _integer(path, line, "last bottom layer", tokens[1])


def parse_workload(text: str, path: PathLike = "<text>") -> Workload:
    """Parse a text workload; ``path`` only names the source in error messages."""
    lines = _content_lines(text)
    if not lines:
        raise TextWorkloadError(path, None, "the workload is empty (no parallelism type line)")
    first_line, first_tokens = lines[0]
    parallelism, last_bottom = _header(path, first_tokens, first_line)
    if len(lines) < 2:
        raise TextWorkloadError(path, first_line, "the layer count line is missing")
    count_line, count_tokens = lines[1]
    if len(count_tokens) != 1:
        raise TextWorkloadError(path, count_line, "the layer count line must hold one integer")
    declared = _integer(path, count_line, "layer count", count_tokens[0])
    layers = tuple(parse_layer(path, number, tokens) for number, tokens in lines[2:])
    if declared != len(layers) or not layers:
        raise TextWorkloadError(
            path, count_line, f"declares {declared} layers but {len(layers)} layer lines follow"
        )
    if last_bottom is not None and not 1 <= last_bottom < len(layers):
        raise TextWorkloadError(
            path,
            first_line,
            f"last bottom layer {last_bottom} must be between 1 and {len(layers) - 1}",
        )
    return Workload(parallelism, last_bottom, declared, layers)
