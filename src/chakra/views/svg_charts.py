"""Charts as inline SVG text for ``report.html``: busy-fraction bands over time, horizontal
stacked bars (shares of a whole) and horizontal grouped bars (values side by side). Pure
functions of numbers and labels; every label is escaped, and nothing refers outside the
SVG (no fonts, images, links, not even a namespace URL: inline SVG in HTML needs none), so
the page that holds them stays self-contained."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any, Optional

import msgspec

WIDTH = 760
LABEL_W = 170  # left column for the row labels
ROW_H = 16
#: Colours of the matplotlib defaults the PNG plots use: host threads blue, GPU streams orange.
THREAD, STREAM = "#1f77b4", "#ff7f0e"
#: Unexplained time ([idle]/[delay]) in busy bands, as utilisation.png draws it.
UNEXPLAINED = "#b0b0b0"
PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3",
           "#8c8c8c", "#ccb974", "#64b5cd")  # fmt: skip


class Band(msgspec.Struct, frozen=True):
    """One row of a band panel: its label, colour and value (0-1) in each time bin;
    ``unexplained``: a second value per bin drawn grey above the first (measured time the
    graph does not explain: ``[idle]``/``[delay]``), or None."""

    label: str
    color: str
    values: list[float]
    unexplained: Optional[list[float]] = None


class Part(msgspec.Struct, frozen=True):
    """One piece of a bar: what it is, how much (any unit, ≥ 0), its colour."""

    label: str
    value: float
    color: str


def _svg(height: float, body: list[str], title: str) -> str:
    return (
        f'<svg width="{WIDTH}" height="{height:.0f}" '
        f'viewBox="0 0 {WIDTH} {height:.0f}" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>{''.join(body)}</svg>"
    )


def _text(x: float, y: float, text: str, anchor: str = "start", size: int = 11) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}">'
        f"{escape(text)}</text>"
    )


def _short(label: str, room: int = 30) -> str:
    """``label`` cut to ``room`` characters (an ellipsis marks the cut), to fit its column."""
    return label if len(label) <= room else label[: room - 1] + "…"


def round_ticks(low: float, high: float, most: int = 6, outside: bool = False) -> list[float]:
    """Round tick values for ``low``-``high``: multiples of 1, 2, 2.5 or 5 times a power of
    ten, at most ``most`` of them (one more with ``outside``), within the range, or with
    ``outside`` the smallest such run that covers it (an axis then spans its first to
    its last tick). 0 alone when the range is empty or not finite."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [0.0]
    raw = (high - low) / max(most - 1, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    slack = 1e-9
    if outside:
        first, last = math.floor(low / step + slack), math.ceil(high / step - slack)
    else:
        first, last = math.ceil(low / step - slack), math.floor(high / step + slack)
    return [round(k * step, 10) + 0.0 for k in range(first, last + 1)]


def tick_label(value: float) -> str:
    """A tick value as text: thousands commas, decimals only where the value has them."""
    if float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def _step_path(values: Sequence[float], x0: float, width: float, base: float, height: float) -> str:
    """A closed step outline: value v in bin k fills ``height * min(v, 1)`` above ``base``;
    runs of equal (rounded) values share one segment."""
    step = width / max(len(values), 1)
    parts = [f"M{x0:.1f},{base:.1f}"]
    previous: Optional[float] = None
    for k, value in enumerate(values):
        top = round(base - height * min(max(value, 0.0), 1.0), 1)
        if top != previous:
            parts.append(f"H{x0 + k * step:.1f}V{top:.1f}")
            previous = top
    parts.append(f"H{x0 + width:.1f}V{base:.1f}Z")
    return "".join(parts)


def band_panel(title: str, bands: Sequence[Band], span_us: float) -> str:
    """A panel of rows, one per band, each filled to its value per bin, under ``title``,
    with a time axis from 0 to ``span_us`` µs."""
    plot_w = WIDTH - LABEL_W - 20
    top, body = 22, [_text(4, 14, title, size=12)]
    for row, band in enumerate(bands):
        base = top + (row + 1) * ROW_H
        body.append(_text(LABEL_W - 6, base - 4, _short(band.label), "end", 10))
        body.append(
            f'<rect x="{LABEL_W}" y="{base - ROW_H + 1}" width="{plot_w}" '
            f'height="{ROW_H - 2}" fill="#f3f3f3"/>'
        )
        if band.unexplained is not None:
            stacked = [a + b for a, b in zip(band.values, band.unexplained)]
            path = _step_path(stacked, LABEL_W, plot_w, base - 1, ROW_H - 2)
            body.append(f'<path d="{path}" fill="{UNEXPLAINED}"/>')
        path = _step_path(band.values, LABEL_W, plot_w, base - 1, ROW_H - 2)
        body.append(f'<path d="{path}" fill="{band.color}"/>')
    axis = top + len(bands) * ROW_H + 4
    for tick in round_ticks(0.0, span_us):
        x = LABEL_W + (plot_w * tick / span_us if span_us > 0 else 0.0)
        body.append(f'<line x1="{x:.1f}" y1="{axis}" x2="{x:.1f}" y2="{axis + 4}" stroke="#555"/>')
        body.append(_text(x, axis + 15, tick_label(tick), "middle", 10))
    body.append(
        _text(LABEL_W + plot_w / 2, axis + 29, "µs since the job's first start", "middle", 10)
    )
    return _svg(axis + 34, body, title)


def stacked_bars(title: str, rows: Sequence[tuple[str, Sequence[Part]]]) -> str:
    """One horizontal bar per row, its parts side by side in proportion to their sum, each
    part wide enough labelled with its share of the row; a legend of the first row's parts."""
    plot_w = WIDTH - LABEL_W - 20
    body = [_text(4, 14, title, size=12)]
    for row, (label, parts) in enumerate(rows):
        y = 24 + row * (ROW_H + 6)
        body.append(_text(LABEL_W - 6, y + ROW_H - 4, _short(label), "end", 10))
        whole, x = sum(max(p.value, 0.0) for p in parts), float(LABEL_W)
        for part in parts:
            w = plot_w * max(part.value, 0.0) / whole if whole > 0 else 0.0
            tip = f"<title>{escape(part.label)}</title>"
            body.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{ROW_H}" '
                f'fill="{part.color}">{tip}</rect>'
            )
            if w > 40:
                body.append(
                    _text(
                        x + w / 2, y + ROW_H - 4, f"{100 * part.value / whole:.0f}%", "middle", 10
                    )
                )
            x += w
    legend = 24 + len(rows) * (ROW_H + 6) + 6
    body.extend(_legend(rows[0][1] if rows else [], legend))
    return _svg(legend + 18, body, title)


def _legend(parts: Sequence[Part], y: float, left: float = LABEL_W) -> list[str]:
    out, x = [], float(left)
    for part in parts:
        out.append(f'<rect x="{x:.1f}" y="{y}" width="10" height="10" fill="{part.color}"/>')
        out.append(_text(x + 14, y + 9, part.label, size=10))
        x += 24 + 6.5 * len(part.label)
    return out


def grouped_bars(title: str, groups: Sequence[tuple[str, Sequence[Part]]], unit: str) -> str:
    """Per group, one horizontal bar per part (one scale for all, from 0 to the largest
    value), each labelled with its name and value (``{:,.0f}`` then ``unit``)."""
    plot_w = WIDTH - LABEL_W - 120
    largest = max((p.value for _, parts in groups for p in parts), default=0.0) or 1.0
    body, y = [_text(4, 14, title, size=12)], 24.0
    for label, parts in groups:
        body.append(_text(4, y + 10, label, size=11))
        y += 14
        for part in parts:
            w = plot_w * max(part.value, 0.0) / largest
            body.append(_text(LABEL_W - 6, y + ROW_H - 5, _short(part.label), "end", 10))
            body.append(
                f'<rect x="{LABEL_W}" y="{y:.1f}" width="{w:.1f}" height="{ROW_H - 3}" '
                f'fill="{part.color}"/>'
            )
            body.append(_text(LABEL_W + w + 4, y + ROW_H - 5, f"{part.value:,.0f} {unit}", size=10))
            y += ROW_H
        y += 8
    return _svg(y + 4, body, title)


class Column(msgspec.Struct, frozen=True):
    """One column of :func:`stacked_columns`: its label, its parts (bottom first) and
    whether it is marked (drawn with a marker and ``mark`` above it)."""

    label: str
    parts: list[Part]
    mark: str = ""


def _y_axis(ticks: Sequence[float], y_of: Any, left: float, right: float) -> list[str]:
    out = []
    for tick in ticks:
        y = y_of(tick)
        out.append(f'<line x1="{left:.1f}" y1="{y:.1f}" x2="{right:.1f}" y2="{y:.1f}" '
                   'stroke="#e3e3e3"/>')  # fmt: skip
        out.append(_text(left - 4, y + 3, tick_label(tick), "end", 10))
    return out


def stacked_columns(title: str, columns: Sequence[Column], unit: str) -> str:
    """One vertical column per entry (side by side, however many: 256 columns still fit),
    its parts stacked in ``unit`` on one round-ticked axis from 0; each column's parts and
    total in its tooltip, at most 16 column labels, marked columns flagged above; a legend
    of the first column's parts."""
    left, plot_h, top = 64.0, 170.0, 40.0
    plot_w = WIDTH - left - 10
    largest = max((sum(max(p.value, 0.0) for p in c.parts) for c in columns), default=0.0)
    ticks = round_ticks(0.0, largest or 1.0, outside=True)

    def y_of(value: float) -> float:
        return top + plot_h * (1 - value / ticks[-1])

    body = [_text(4, 14, title, size=12), _text(4, 28, unit, size=10)]
    body += _y_axis(ticks, y_of, left, left + plot_w)
    width = plot_w / max(len(columns), 1)
    every = math.ceil(len(columns) / 16) if columns else 1
    for k, column in enumerate(columns):
        x, base = left + k * width, top + plot_h
        tip = f"{column.label}: " + ", ".join(f"{p.label} {p.value:,.0f}" for p in column.parts)
        total = sum(max(p.value, 0.0) for p in column.parts)
        body.append(f"<g><title>{escape(tip)}; total {total:,.0f} {escape(unit)}</title>")
        for part in column.parts:
            h = plot_h * max(part.value, 0.0) / ticks[-1]
            body.append(
                f'<rect x="{x + width * 0.1:.1f}" y="{base - h:.1f}" width="{width * 0.8:.2f}" '
                f'height="{h:.1f}" fill="{part.color}"/>'
            )
            base -= h
        body.append("</g>")
        if column.mark:
            body.append(_text(x + width / 2, base - 4, f"▼ {column.mark}", "middle", 10))
        if k % every == 0:
            body.append(_text(x + width / 2, top + plot_h + 13, column.label, "middle", 10))
    legend = top + plot_h + 24
    body.extend(_legend(columns[0].parts if columns else [], legend, left))
    return _svg(legend + 16, body, title)


def change_bars(title: str, bars: Sequence[Part], unit: str = "%") -> str:
    """One horizontal bar per part from a zero line, left for a negative value (faster),
    right for a positive one, each labelled with its name and signed value; the axis
    spans round ticks around every value and 0 (not from 0 of the quantity changed, so
    a change of 1% shows)."""
    plot_w = WIDTH - LABEL_W - 90
    values = [p.value for p in bars]
    ticks = round_ticks(min([0.0, *values]), max([0.0, *values]), outside=True)
    low, high = ticks[0], ticks[-1]
    if high <= low:
        low, high, ticks = -1.0, 1.0, [-1.0, 0.0, 1.0]

    def x_of(value: float) -> float:
        return LABEL_W + plot_w * (value - low) / (high - low)

    body, y = [_text(4, 14, title, size=12)], 24.0
    for part in bars:
        body.append(_text(LABEL_W - 6, y + ROW_H - 4, _short(part.label), "end", 10))
        a, b = sorted((x_of(0.0), x_of(part.value)))
        body.append(
            f'<rect x="{a:.1f}" y="{y:.1f}" width="{b - a:.1f}" height="{ROW_H - 2}" '
            f'fill="{part.color}"><title>{escape(part.label)}</title></rect>'
        )
        body.append(_text(b + 4, y + ROW_H - 4, f"{part.value:+.2f}{unit}", size=10))
        y += ROW_H + 4
    axis = y + 2
    for tick in ticks:
        x = x_of(tick)
        body.append(f'<line x1="{x:.1f}" y1="22" x2="{x:.1f}" y2="{axis + 4:.1f}" '
                    f'stroke="{"#555" if tick == 0 else "#e3e3e3"}"/>')  # fmt: skip
        body.append(_text(x, axis + 15, tick_label(tick) + unit, "middle", 10))
    return _svg(axis + 22, body, title)
