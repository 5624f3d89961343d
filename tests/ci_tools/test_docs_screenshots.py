"""``ci_tools/docs_screenshots.py``: the pages it photographs are built without Chromium,
a screenshot is cropped and small where Chromium is installed, and the docs show only
images that exist (each under 300 KB, each shown)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "ci_tools" / "docs_screenshots.py"
DOCS = REPO_ROOT / "docs"
IMAGE_LINK = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
MAX_IMAGE_BYTES = 300_000


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_screenshots", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The script's pages for a 2-rank job (the docs' is 8 ranks: same code, more time)."""
    script = load_script()
    work = tmp_path_factory.mktemp("screens")
    results = script.build_job(work, ranks=2, ops_per_step=40)
    return dict(script.write_pages(results, work / "pages"))


def test_pages_hold_one_section_each_with_the_report_style(pages: dict[str, Path]) -> None:
    assert set(pages) == {"report-summary", "report-ranks", "chakra-diff"}
    summary = pages["report-summary"].read_text()
    assert '<section id="summary">' in summary and "<style>" in summary
    assert '<section id="ranks">' not in summary and 'id="rank-details"' not in summary
    ranks = pages["report-ranks"].read_text()
    assert '<section id="ranks">' in ranks and '<section id="summary">' not in ranks
    assert ranks.count("<section") == ranks.count("</section>")
    diff = pages["chakra-diff"].read_text()
    assert "chakra_diff results/ --scale gpu=0.5" in diff
    assert "makespan and critical path by kind" in diff and "ops and kernels that changed" in diff


def test_a_missing_section_is_named() -> None:
    script = load_script()
    with pytest.raises(ValueError, match='no <section id="nowhere">'):
        script.section_page("<html><head></head><body></body></html>", "nowhere")


def test_nested_sections_are_kept_whole() -> None:
    page = (
        "<html><head><style>b{}</style></head><body><section id='x'></section>"
        '<section id="a"><section>in</section>tail</section><p>after</p></body></html>'
    )
    cut = load_script().section_page(page, "a")
    assert "in</section>tail</section>" in cut and "after" not in cut and "id='x'" not in cut
    assert "<style>b{}</style>" in cut


def test_screenshot_is_cropped_and_small(pages: dict[str, Path], tmp_path: Path) -> None:
    script = load_script()
    browser = script.find_chromium()
    if browser is None:
        pytest.skip("no headless Chromium (chromium-headless-shell, chromium, google-chrome)")
    from PIL import Image

    png = tmp_path / "diff.png"
    script.screenshot(browser, pages["chakra-diff"], png)
    with Image.open(png) as image:
        width, height = image.size
    assert width == script.WIDTH_PX
    assert 200 < height < script.WINDOW_HEIGHT_PX  # cropped below the text
    assert png.stat().st_size < MAX_IMAGE_BYTES
    assert not list(tmp_path.glob("*.raw.png"))


def test_docs_show_only_images_that_exist_and_every_image_is_shown() -> None:
    shown = set()
    for page in DOCS.rglob("*.md"):
        for target in IMAGE_LINK.findall(page.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            image = (page.parent / target).resolve()
            assert image.is_file(), f"{page.name} shows {target}, which does not exist"
            shown.add(image)
    images = {p.resolve() for p in (DOCS / "images").glob("*.png")}
    assert {"report-summary.png", "report-ranks.png", "chakra-diff.png"} <= {p.name for p in images}
    assert images <= shown, f"not shown in docs/: {sorted(p.name for p in images - shown)}"
    for image in images:
        assert image.stat().st_size < MAX_IMAGE_BYTES, f"{image.name} is over 300 KB"
