"""Checks of a ``report.html`` page against its ``report.json``, shared by the view and
pipeline tests: the numbers it shows, and that it is self-contained. Also renders a page in
headless Chromium, where one is installed."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Optional

from chakra.views.html_numbers import format_value, resolve

CHROMIUM_NAMES = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")
#: Attributes through which a page could fetch or link to something.
URL_ATTRIBUTES = {"src", "href", "xlink:href", "srcset", "action", "data", "poster",
                  "background", "formaction", "ping"}  # fmt: skip
FETCHING_TAGS = {"script", "link", "img", "iframe", "object", "embed", "audio", "video",
                 "source", "base", "form"}  # fmt: skip


class PageReader(HTMLParser):
    """What a page holds: its number cells (pointer -> (unit, text)), the text of its table
    cells, every URL-bearing attribute, its tags, ids and CSS."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.cells: dict[str, tuple[str, str]] = {}
        self.td_texts: list[str] = []
        self.urls: list[tuple[str, str, str]] = []
        self.tags: set[str] = set()
        self.ids: set[str] = set()
        self.css: list[str] = []
        self._cell: Optional[tuple[str, str]] = None
        self._text: list[str] = []
        self._in: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        self.tags.add(tag)
        self._in.append(tag)
        values = {name: value or "" for name, value in attrs}
        self.urls += [(tag, name, value) for name, value in values.items()
                      if name in URL_ATTRIBUTES]  # fmt: skip
        if "id" in values:
            self.ids.add(values["id"])
        if "style" in values:
            self.css.append(values["style"])
        if tag == "td":
            self._text = []
        if "data-json" in values:
            self._cell, self._text = (values["data-json"], values.get("data-unit", "")), []

    def handle_endtag(self, tag: str) -> None:
        if self._in:
            self._in.pop()
        if self._cell is not None:
            pointer, unit = self._cell
            self.cells[pointer] = (unit, "".join(self._text))
            self._cell = None
        if tag == "td":
            self.td_texts.append("".join(self._text))

    def handle_data(self, data: str) -> None:
        self._text.append(data)
        if self._in and self._in[-1] == "style":
            self.css.append(data)


def read_page(page: str) -> PageReader:
    reader = PageReader()
    reader.feed(page)
    reader.close()
    return reader


def required_pointers(report: dict[str, Any]) -> list[str]:
    """The values the page must show: per rank its makespans, errors, unexplained time and
    breakdown percentages; per what-if scenario run, every rank's makespan and change."""
    out = []
    for i, entry in enumerate(report["ranks"]):
        out += [f"/ranks/{i}/simulation/{key}" for key in (
            "simulated_makespan_us", "measured_makespan_us", "error_pct",
            "model_only_makespan_us", "model_only_error_pct", "unexplained_us")]  # fmt: skip
        for source in ("breakdown", "measured_breakdown"):
            if entry["views"].get(source) is not None:
                out += [f"/ranks/{i}/views/{source}/{part}_pct"
                        for part in ("compute", "communication", "idle")]  # fmt: skip
    for k, scenario in enumerate(report.get("what_if", [])):
        for j in range(len(scenario["ranks"])):
            out += [f"/what_if/{k}/ranks/{j}/makespan_us", f"/what_if/{k}/ranks/{j}/change_pct"]
    return out


def check_page_numbers(page: str, report: dict[str, Any]) -> int:
    """Raise AssertionError listing every required value the page does not show and every
    number cell whose text is not its report.json value by the formatting rule; return
    how many number cells were checked."""
    cells = read_page(page).cells
    problems = [f"{p}: not on the page" for p in required_pointers(report) if p not in cells]
    for pointer, (unit, text) in cells.items():
        expected = format_value(resolve(report, pointer), unit)
        if text != expected:
            problems.append(f"{pointer}: page shows {text!r}, report.json gives {expected!r}")
    if problems:
        raise AssertionError(f"{len(problems)} problems: " + "; ".join(problems[:10]))
    return len(cells)


def check_self_contained(page: str) -> None:
    """No script, style sheet, image, frame or form; every link to an id of the page; no
    CSS that fetches; no URL at all."""
    reader = read_page(page)
    assert not reader.tags & FETCHING_TAGS, reader.tags & FETCHING_TAGS
    for tag, name, value in reader.urls:
        assert name == "href" and tag == "a" and value.startswith("#"), (tag, name, value)
        assert value[1:] in reader.ids, f"link to a missing id: {value}"
    assert not [css for css in reader.css if "url(" in css or "@import" in css]
    assert "://" not in page and "//" not in "".join(v for _, _, v in reader.urls)


def chromium() -> Optional[str]:
    """A headless Chromium on PATH (or at /usr/bin), else None."""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name) or shutil.which(name, path="/usr/bin")
        if found:
            return found
    return None


def rendered_dom(browser: str, page: Path, timeout_s: float = 60) -> str:
    """The DOM of ``page`` after headless Chromium loaded and laid it out."""
    done = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--virtual-time-budget=2000", "--dump-dom", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=timeout_s, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "<body" in done.stdout, done.stderr[-2000:]
    return done.stdout


#: Appended to a copy of a page to measure it: writes the laid-out height into the DOM.
HEIGHT_PROBE = (
    "<script>addEventListener('load',()=>document.body.setAttribute("
    "'data-height',String(document.documentElement.scrollHeight)))</script>"
)


def page_height(browser: str, page: Path, scratch: Path, width_px: int = 1400) -> int:
    """The height (px) of ``page`` laid out by headless Chromium in a window ``width_px``
    wide: measured on a copy in ``scratch`` with a probe script added (the page itself
    has none)."""
    probe = scratch / f"probe-{page.name}"
    probe.write_text(page.read_text().replace("</body>", HEIGHT_PROBE + "</body>"))
    done = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--window-size={width_px},1000", "--virtual-time-budget=2000", "--dump-dom",
         probe.resolve().as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    found = re.search(r'data-height="(\d+)"', done.stdout)
    assert done.returncode == 0 and found, done.stderr[-2000:]
    return int(found.group(1))
