"""Debian's Chromium driven by Playwright: the one copy of the setup the browser tests (and the
benchmarks that open a page) share.

In a test module: `pytestmark = skip_without_browser` and `browser = browser_fixture()`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
try:
    from playwright.sync_api import Page, expect, sync_playwright
except ImportError:  # pragma: no cover - depends on the machine
    Page = expect = sync_playwright = None  # type: ignore[assignment,misc]

skip_without_browser = [
    pytest.mark.skipif(sync_playwright is None, reason="playwright (Python) is not installed: pip install playwright"),
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed: apt-get install -y chromium"),
]

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def launch(playwright: object) -> object:
    """A headless Chromium browser from a started `sync_playwright()`."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)  # type: ignore[attr-defined]


def browser_fixture() -> Callable[[], Iterator[object]]:
    """A module-scoped `browser` fixture: one Chromium for all the tests of the module that assigns it."""

    @pytest.fixture(scope="module")
    def browser() -> Iterator[object]:
        with sync_playwright() as playwright:
            instance = launch(playwright)
            yield instance
            instance.close()

    return browser
