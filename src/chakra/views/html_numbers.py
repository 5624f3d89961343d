"""How ``report.html`` shows the numbers of ``report.json``: one formatting rule, and table
cells that say which value they show.

The rule (:func:`format_value`), by the unit of the value:

========== ============== ===================================================
unit       format         used for
========== ============== ===================================================
``us``     ``{:,.0f}``    times in µs, whole µs with thousands commas: 26,665
``pct``    ``{:.1f}%``    shares already in percent (breakdowns): 47.2%
``signed`` ``{:+.2f}%``   errors and changes in percent, signed: -14.60%
``ratio``  ``{:.1%}``     ratios 0-1 shown in percent (overlap, share): 31.2%
``count``  ``{:,}``       counts: 1,024
``id``     ``{:d}``       node ids, plain (pasted into Perfetto's search): 1087
========== ============== ===================================================

and ``-`` for a value that is absent or null. Every number cell carries
``data-json="<JSON pointer into report.json>"`` and ``data-unit="<unit>"``, so a reader (or a
test) can check the page against the report: ``format_value(resolve(report, pointer),
unit)`` is the cell's text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any, Union

US, PCT, SIGNED, RATIO, COUNT, ID = "us", "pct", "signed", "ratio", "count", "id"
FORMATS = {US: "{:,.0f}", PCT: "{:.1f}%", SIGNED: "{:+.2f}%", RATIO: "{:.1%}", COUNT: "{:,}",
           ID: "{:d}"}  # fmt: skip
#: What each unit is and a value of it, as the page's note on numbers shows the rule.
EXAMPLES = {US: ("times in µs, rounded to whole µs", 26665.37),
            PCT: ("shares in percent, one decimal", 47.156),
            SIGNED: ("errors and changes in percent, signed, two decimals", -14.6014),
            RATIO: ("ratios (0-1) in percent, one decimal", 0.31196),
            COUNT: ("counts, thousands separated", 1024),
            ID: ("node ids, plain (paste them into Perfetto's search)", 1087)}  # fmt: skip
MISSING = "-"
#: Names longer than this are shortened on the page (whole in the cell's tooltip).
NAME_ROOM = 60


def format_value(value: Any, unit: str) -> str:
    """``value`` by the rule of ``unit`` (a key of :data:`FORMATS`); ``-`` for None."""
    if value is None:
        return MISSING
    return FORMATS[unit].format(value)


def _token(key: Union[str, int]) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def resolve(document: Any, pointer: str) -> Any:
    """The value at a JSON pointer (RFC 6901) in ``document``; None where a key is absent."""
    value = document
    for token in pointer.split("/")[1:]:
        key = token.replace("~1", "/").replace("~0", "~")
        if isinstance(value, Mapping):
            value = value.get(key)
        elif isinstance(value, Sequence) and not isinstance(value, str):
            value = value[int(key)]
        if value is None:
            return None
    return value


@dataclass(frozen=True)
class At:
    """A value of the report document and its JSON pointer; indexing goes down both at
    once (an absent key gives None), so a cell never shows a value other than the one its
    pointer names."""

    value: Any
    path: str = ""

    def __getitem__(self, key: Union[str, int]) -> At:
        if isinstance(self.value, Mapping):
            inner = self.value.get(key)
        else:
            inner = None if self.value is None else self.value[key]
        return At(inner, f"{self.path}/{_token(key)}")

    def items(self) -> list[At]:
        """The elements of a list value (none for None)."""
        return [self[k] for k in range(len(self.value or []))]

    def cell(self, unit: str, tag: str = "td") -> str:
        """The value, formatted, in a ``tag`` element that names its pointer and unit (the
        page's style sets such cells right-aligned, as numbers)."""
        return (
            f'<{tag} data-json="{escape(self.path)}" data-unit="{unit}">'
            f"{format_value(self.value, unit)}</{tag}>"
        )


def text_cell(text: Any) -> str:
    """A table cell of text (escaped: trace names hold <, > and &)."""
    return f"<td>{escape(str(text))}</td>"


def _without_brackets(name: str) -> str:
    """``name`` with what its outermost ``<...>`` and ``(...)`` hold replaced by "…"."""
    out, depth = [], 0
    for char in name:
        if char in "<(":
            if depth == 0:
                out.append(char + "…")
            depth += 1
        elif char in ">)" and depth > 0:
            depth -= 1
            if depth == 0:
                out.append(char)
        elif depth == 0:
            out.append(char)
    return "".join(out)


def short_name(name: str, room: int = NAME_ROOM) -> str:
    """A kernel or op name that fits ``room`` characters: as it is when it fits, else
    without its template and argument lists, else its head and tail around "…"."""
    if len(name) <= room:
        return name
    bare = _without_brackets(name)
    if len(bare) <= room:
        return bare
    tail = room // 3
    return bare[: room - tail - 1] + "…" + bare[-tail:]


def name_cell(name: Any) -> str:
    """A table cell of a trace name, shortened by :func:`short_name` (escaped), the whole
    name in its tooltip (``title``) when shortened."""
    text = str(name)
    shown = short_name(text)
    if shown == text:
        return text_cell(text)
    return f'<td title="{escape(text)}">{escape(shown)}</td>'


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], caption: str = "") -> str:
    """A table of built cells (``<td>`` strings) under escaped ``headers``."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(f"<tr>{''.join(row)}</tr>" for row in rows)
    title = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{title}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
