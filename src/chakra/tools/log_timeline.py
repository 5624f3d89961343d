"""Simulator logs to Chrome traces, in microseconds (reference §7.5, with its unit bug fixed).

The ``astra-sim`` log format has one record per line, ``issue,<k>=<npu>,<k>=<cycle>,
<k>=<node id>,<k>=<node name>`` and the same with ``callback``; each value is the text after
the first ``=`` of its item and the node name is the rest of the line, so names may contain
``=`` and ``,``. Lines that do not start with such a record are skipped, whatever they
contain; a record may follow bracketed log prefixes such as ``[12:00:01] [info] ``.
An issue and its callback make one complete event on process ``npu``, with ``ts`` = issue
cycle / MHz and ``dur`` = (callback - issue) cycles / MHz, both in microseconds, on a track
chosen by the node name (:data:`TRACKS`). The processes and tracks of the NPUs that have a
record are named (metadata events); ``--num_npus`` bounds the NPU ids, so that the output
grows with the log, not with the NPU count. The ``chakra-sim`` format is the Chrome trace
``chakra_sim --timeline`` writes, already in microseconds: it is checked and passed through.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from chakra.errors import FileAccessError, PathLike, TimelineError
from chakra.fileio.json_document import JsonDocument
from chakra.fileio.regular import open_regular_text
from chakra.tools.option_values import INPUT_FORMATS

logger = logging.getLogger(__name__)


#: Track ids (Chrome ``tid``) and their names; a name matching none of the rules of
#: :func:`track_of` goes to the last, generic one.
TRACKS = {
    1: "local memory",
    2: "remote memory",
    3: "compute",
    4: "communication",
    5: "other",
}

_RECORD = re.compile(r"^\s*(?:\[[^\]]*\]\s*)*(issue|callback),(.*)$")
_COMM_NAMES = ("COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE")


@dataclass(frozen=True)
class Record:
    """One issue or callback line."""

    line: int
    event: str
    npu: int
    cycle: int
    node_id: int
    name: str


def track_of(name: str) -> int:
    """The track of a node by its name (the reference's substring rules, plus a fallback:
    memory nodes naming neither kind go to remote memory, unknown names to ``other``)."""
    if "MEM_LOAD_NODE" in name or "MEM_STORE_NODE" in name:
        return 1 if "LOCAL_MEMORY" in name else 2
    if "COMP_NODE" in name:
        return 3
    if any(kind in name for kind in _COMM_NAMES):
        return 4
    return 5


def parse_record(text: str, line: int, path: PathLike) -> Record | None:
    """The record on one line, None if the line holds none; a malformed record raises."""
    match = _RECORD.search(text.rstrip("\r\n"))
    if match is None:
        return None
    items = match.group(2).split(",", 3)
    where = f"{path}:{line}"
    if len(items) != 4:
        raise TimelineError(
            f"{where}: a {match.group(1)} record needs 4 items (npu, cycle, node id, name),"
            f" found {len(items)}"
        )
    values = []
    for position, item in enumerate(items):
        _key, sep, value = item.partition("=")
        if not sep:
            raise TimelineError(f"{where}: item {position + 1} {item.strip()!r} has no '='")
        values.append(value.strip() if position < 3 else value)
    numbers = []
    for label, value in zip(("npu id", "cycle", "node id"), values):
        try:
            numbers.append(int(value))
        except ValueError:
            raise TimelineError(f"{where}: {label} {value!r} is not an integer") from None
    return Record(line, match.group(1), numbers[0], numbers[1], numbers[2], values[3])


def _metadata_events(npus: Iterable[int]) -> list[dict[str, Any]]:
    """The process and track names of each of ``npus``."""
    events = []
    for npu in npus:
        events.append(
            {
                "ph": "M",
                "name": "process_name",
                "pid": npu,
                "tid": 0,
                "args": {"name": f"npu {npu}"},
            }
        )
        for tid, label in TRACKS.items():
            events.append(
                {"ph": "M", "name": "thread_name", "pid": npu, "tid": tid, "args": {"name": label}}
            )
    return events


def log_to_events(
    records: Iterable[Record], path: PathLike, num_npus: int, frequency_mhz: float
) -> list[dict[str, Any]]:
    """Complete events (``ph`` = ``X``) in callback order, times in microseconds."""
    issued: dict[tuple[int, int], Record] = {}
    events: list[dict[str, Any]] = []
    for record in records:
        where = f"{path}:{record.line}"
        if not 0 <= record.npu < num_npus:
            raise TimelineError(f"{where}: npu id {record.npu} is outside 0..{num_npus - 1}")
        key = (record.npu, record.node_id)
        if record.event == "issue":
            if key in issued:
                raise TimelineError(
                    f"{where}: node {record.node_id} of npu {record.npu} issued again before"
                    f" its callback (first issued on line {issued[key].line})"
                )
            issued[key] = record
            continue
        start = issued.pop(key, None)
        if start is None:
            raise TimelineError(
                f"{where}: callback of node {record.node_id} on npu {record.npu} without an issue"
            )
        if record.cycle < start.cycle:
            raise TimelineError(
                f"{where}: callback at cycle {record.cycle} precedes its issue at cycle"
                f" {start.cycle} (line {start.line})"
            )
        events.append(
            {
                "ph": "X",
                "name": start.name,
                "pid": record.npu,
                "tid": track_of(start.name),
                "ts": start.cycle / frequency_mhz,
                "dur": (record.cycle - start.cycle) / frequency_mhz,
                "args": {
                    "node_id": record.node_id,
                    "issue_cycle": start.cycle,
                    "callback_cycle": record.cycle,
                },
            }
        )
    if issued:
        logger.warning("%d issued nodes never got a callback; left out", len(issued))
    return events


def convert_log(path: PathLike, num_npus: int, frequency_mhz: float) -> dict[str, Any]:
    """The Chrome trace of a simulator log; see the module docstring. O(lines)."""
    if num_npus < 1:
        raise TimelineError(f"--num_npus must be at least 1, not {num_npus}")
    if not frequency_mhz > 0:
        raise TimelineError(
            f"--npu_frequency must be a positive number of MHz, not {frequency_mhz}"
        )
    try:
        with open_regular_text(path, errors="replace") as lines:
            records = [
                record
                for number, text in enumerate(lines, start=1)
                if (record := parse_record(text, number, path)) is not None
            ]
    except OSError as exc:
        raise FileAccessError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not records:
        raise TimelineError(f"{path}: no issue or callback record found")
    events = log_to_events(records, path, num_npus, frequency_mhz)
    present = sorted({record.npu for record in records})  # not every NPU of --num_npus
    return {
        "traceEvents": _metadata_events(present) + events,
        "displayTimeUnit": "ms",
        "otherData": {"num_npus": num_npus, "npu_frequency_mhz": frequency_mhz},
    }


def _finite_float(text: str) -> float:
    """A JSON number with a fraction or exponent, refused when it is out of float range."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number out of range: {text[:20]}{'...' if len(text) > 20 else ''}")
    return value


def _no_constant(text: str) -> float:
    """``NaN``/``Infinity``/``-Infinity``: not JSON, refused."""
    raise ValueError(f"{text} is not a JSON number")


def normalise_chrome_trace(path: PathLike) -> dict[str, Any]:
    """A ``chakra_sim --timeline`` trace (or any Chrome trace, object or bare array form)
    as the object form, every event checked to have ``ph``, and ``ts`` for timed events."""
    try:
        with open_regular_text(path) as stream:
            data = json.load(stream, parse_float=_finite_float, parse_constant=_no_constant)
    except OSError as exc:
        raise FileAccessError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except RecursionError:
        raise TimelineError(f"{path}: not JSON (nested deeper than Python can decode)") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise TimelineError(f"{path}: not JSON ({exc})") from exc
    events = (
        data
        if isinstance(data, list)
        else data.get("traceEvents")
        if isinstance(data, dict)
        else None
    )
    if not isinstance(events, list):
        raise TimelineError(f"{path}: not a Chrome trace (no traceEvents list)")
    for index, event in enumerate(events):
        if not isinstance(event, dict) or "ph" not in event:
            raise TimelineError(f"{path}: traceEvents[{index}] is not an event with a 'ph'")
        if event["ph"] != "M" and not isinstance(event.get("ts"), (int, float)):
            raise TimelineError(f"{path}: traceEvents[{index}] has no numeric 'ts'")
    result = dict(data) if isinstance(data, dict) else {}
    result["traceEvents"] = events
    result.setdefault("displayTimeUnit", "ms")
    return result


def timeline(
    input_path: PathLike,
    input_format: str = "astra-sim",
    num_npus: int | None = None,
    frequency_mhz: float | None = None,
) -> JsonDocument:
    """The Chrome trace of ``input_path`` in ``input_format`` (:data:`INPUT_FORMATS`)."""
    if input_format == "chakra-sim":
        return normalise_chrome_trace(input_path)
    if input_format != "astra-sim":
        raise TimelineError(f"unknown input format {input_format!r}; use one of {INPUT_FORMATS}")
    if num_npus is None or frequency_mhz is None:
        raise TimelineError("the astra-sim log format needs --num_npus and --npu_frequency")
    return convert_log(input_path, num_npus, frequency_mhz)


def complete_events(trace: JsonDocument) -> Sequence[JsonDocument]:
    """The complete (``X``) events of a trace."""
    return [event for event in trace["traceEvents"] if event.get("ph") == "X"]
