"""The screenshots of docs/user-guide.md: report.html's job summary and rank comparison,
and a ``chakra_diff`` run, made from a small synthetic job.

    python ci_tools/docs_screenshots.py            # writes docs/images/report-*.png
    python ci_tools/docs_screenshots.py --out DIR --work DIR

Steps: :func:`build_job` writes an 8-rank synthetic job (``chakra.synth``) and runs the
pipeline on it; :func:`write_pages` cuts report.html's ``summary`` and ``ranks`` sections
out into pages of their own (the page's style kept) and writes ``chakra_diff``'s text for
the job against a what-if of it as a page; :func:`screenshot` renders a page with headless
Chromium 1400 px wide and crops the blank margin below it (Pillow, which matplotlib
brings). Without Chromium the pages are written and the screenshots skipped, with a line
saying so. Each PNG is saved with an adaptive palette, so that it stays small.
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

REPO_ROOT = Path(__file__).resolve().parent.parent
IMAGES = REPO_ROOT / "docs" / "images"
CHROMIUM_NAMES = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")
WIDTH_PX = 1400
#: The window rendered before cropping: taller than any of the pages.
WINDOW_HEIGHT_PX = 4000
#: The what-if ``chakra_diff`` compares the job with.
DIFF_RULE = "gpu=0.5"
#: (image name, report.html section id) of the report's screenshots.
SECTIONS = (("report-summary", "summary"), ("report-ranks", "ranks"))
DIFF_IMAGE = "chakra-diff"


def build_job(work: Path, ranks: int = 8, ops_per_step: int = 60) -> Path:
    """A synthetic ``ranks``-rank job in ``work/traces`` run through the pipeline into
    ``work/results`` (no plot); returns the results folder."""
    from chakra.pipeline import ranks_in_folder, run_pipeline
    from chakra.synth import SynthOptions, generate_job

    traces, results = work / "traces", work / "results"
    generate_job(SynthOptions(seed=3, ranks=ranks, steps=2, ops_per_step=ops_per_step), traces)
    run_pipeline(ranks_in_folder(traces), results, plot=False)
    return results


def section_page(page: str, section_id: str) -> str:
    """``page`` (report.html's text) with only its ``<section id="section_id">`` in the
    body, its ``<head>`` (title, style) kept. Raises ValueError when the section is not
    there."""
    start = page.find(f'<section id="{section_id}">')
    if start < 0:
        raise ValueError(f'report.html has no <section id="{section_id}">')
    end, depth = -1, 0
    for found in re.finditer(r"<(/?)section\b", page[start:]):
        depth += -1 if found.group(1) else 1
        if depth == 0:
            end = start + found.end()
            break
    if end < 0:
        raise ValueError(f'report.html: <section id="{section_id}"> is not closed')
    end = page.index(">", end) + 1
    head = page[: page.index("<body")]
    body = page[start:end]
    return f'{head}<body><main style="max-width:{WIDTH_PX - 40}px">{body}</main></body></html>\n'


def diff_text(results: Path, rule: str = DIFF_RULE, top: int = 12) -> str:
    """``chakra_diff RESULTS --scale RULE --top TOP``'s output (run as a subprocess, as a
    user runs it)."""
    done = subprocess.run(
        [sys.executable, "-m", "chakra.cli.diff", str(results), "--scale", rule,
         "--top", str(top)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout


def diff_page(text: str, command: str) -> str:
    """A page showing ``command`` and its terminal output ``text``, as a terminal would."""
    style = (
        "body{margin:0;padding:16px;background:#1e1e1e;color:#ddd;"
        "font:14px/1.35 DejaVu Sans Mono,monospace}pre{margin:0;white-space:pre}"
        ".prompt{color:#8fd18f}"
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>chakra_diff</title>"
        f"<style>{style}</style></head><body><pre><span class='prompt'>$ </span>"
        f"{html.escape(command)}\n{html.escape(text)}</pre></body></html>\n"
    )


def write_pages(results: Path, pages: Path) -> list[tuple[str, Path]]:
    """The pages to photograph, written into ``pages``: (image name, page) pairs."""
    pages.mkdir(parents=True, exist_ok=True)
    report = (results / "report.html").read_text(encoding="utf-8")
    out = []
    for name, section_id in SECTIONS:
        path = pages / f"{name}.html"
        path.write_text(section_page(report, section_id), encoding="utf-8")
        out.append((name, path))
    command = f"chakra_diff results/ --scale {DIFF_RULE} --top 12"
    path = pages / f"{DIFF_IMAGE}.html"
    path.write_text(diff_page(diff_text(results), command), encoding="utf-8")
    out.append((DIFF_IMAGE, path))
    return out


def find_chromium() -> Optional[str]:
    """A headless Chromium on PATH (or in /usr/bin), else None."""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name) or shutil.which(name, path="/usr/bin")
        if found:
            return found
    return None


def screenshot(browser: str, page: Path, png: Path, margin_px: int = 12) -> None:
    """``page`` rendered by headless Chromium ``WIDTH_PX`` wide into ``png``, cropped
    below its content (the colour of the bottom-right pixel counts as blank)."""
    from PIL import Image, ImageChops

    raw = png.with_suffix(".raw.png")
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--hide-scrollbars", f"--window-size={WIDTH_PX},{WINDOW_HEIGHT_PX}",
         "--virtual-time-budget=2000", f"--screenshot={raw}", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    with Image.open(raw) as shot:
        image = shot.convert("RGB")
    raw.unlink()
    blank = Image.new("RGB", image.size, image.getpixel((image.width - 1, image.height - 1)))
    box = ImageChops.difference(image, blank).getbbox()
    bottom = min(image.height, (box[3] if box else image.height) + margin_px)
    image = image.crop((0, 0, image.width, bottom))
    image.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(png, optimize=True)


def make_screenshots(out: Path, work: Path, browser: Optional[str]) -> list[Path]:
    """Build the job in ``work``, write its pages, and (with ``browser``) the PNGs into
    ``out``; returns the PNGs written."""
    results = build_job(work)
    written = []
    for name, page in write_pages(results, work / "pages"):
        if browser is None:
            continue
        out.mkdir(parents=True, exist_ok=True)
        png = out / f"{name}.png"
        screenshot(browser, page, png)
        written.append(png)
    return written


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=IMAGES, help="where the PNGs go")
    parser.add_argument("--work", type=Path, help="keep the job and pages here (default: temp)")
    args = parser.parse_args(argv)
    browser = find_chromium()
    if browser is None:
        print("no headless Chromium found: pages built, screenshots skipped", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="chakra-screens-") as scratch:
        work = args.work or Path(scratch)
        for png in make_screenshots(args.out, work, browser):
            print(f"{png}: {png.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
