"""Charts as inline SVG text for ``report.html``: busy-fraction bands over time, horizontal
stacked bars (shares of a whole) and horizontal grouped bars (values side by side). Pure
functions of numbers and labels; every label is escaped, and nothing refers outside the
SVG (no fonts, images, links, not even a namespace URL: inline SVG in HTML needs none), so
the page that holds them stays self-contained."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Optional

import msgspec

WIDTH = 760
LABEL_W = 170  # left column for the row labels
ROW_H = 16
#: Colours of the matplotlib defaults the PNG plots use: host threads blue, GPU streams orange.
THREAD, STREAM = "#1f77b4", "#ff7f0e"
PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3",
           "#8c8c8c", "#ccb974", "#64b5cd")  # fmt: skip


class Band(msgspec.Struct, frozen=True):
    """One row of a band panel: its label, colour and value (0-1) in each time bin."""

    label: str
    color: str
    values: list[float]


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
        path = _step_path(band.values, LABEL_W, plot_w, base - 1, ROW_H - 2)
        body.append(f'<path d="{path}" fill="{band.color}"/>')
    axis = top + len(bands) * ROW_H + 4
    for k in range(5):
        x = LABEL_W + plot_w * k / 4
        body.append(f'<line x1="{x:.1f}" y1="{axis}" x2="{x:.1f}" y2="{axis + 4}" stroke="#555"/>')
        body.append(_text(x, axis + 15, f"{span_us * k / 4:,.0f}", "middle", 10))
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


def _legend(parts: Sequence[Part], y: float) -> list[str]:
    out, x = [], float(LABEL_W)
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
