"""Debian's Chromium driven by Playwright: the one copy of the setup the browser tests (and the
benchmarks that open a page) share, and `serving()` for the local web app they open.

In a test module: `pytestmark = skip_without_browser` and `browser = browser_fixture()`.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
try:
    from playwright.sync_api import Page, expect, sync_playwright
except ImportError:  # pragma: no cover - depends on the machine
    Page = expect = sync_playwright = None  # type: ignore[assignment,misc]

if expect is not None:
    # Playwright's 5 s for an assertion to come true is tight for a page on a loaded two-core CI machine (two
    # test workers, their Chromiums and the Docker images built beside them): a passing assertion is not slowed.
    expect.set_options(timeout=15_000)

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


def page_fixture() -> Callable[..., Iterator[object]]:
    """A `page` fixture: a fresh 1280×900 browser context per test, on the module's `browser`."""

    @pytest.fixture
    def page(browser: object) -> Iterator[object]:
        context = browser.new_context(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
        yield context.new_page()
        context.close()

    return page


def open_ready(page: Any, address: str, *, timeout: float = 30_000) -> None:
    """Go to `address` in a viewer page and wait until the page says it is ready (`body[data-ready=true]`), also when
    only the hash changes (the page before must not count as ready)."""
    if page.url != "about:blank":
        page.evaluate("() => { document.body.dataset.ready = 'false'; }")
    page.goto(address)
    page.wait_for_selector("body[data-ready=true]", timeout=timeout)


@contextlib.contextmanager
def serving_review(eval_dir: Any) -> Iterator[str]:
    """`assay video review` of the eval directory `eval_dir`, served on 127.0.0.1: its origin."""
    from assay.video.review.server import ReviewServer, create_review_app

    with serving(lambda binding: create_review_app(ReviewServer(eval_dir=eval_dir.resolve(), binding=binding))) as served:
        yield served


@contextlib.contextmanager
def serving_store(database: Any) -> Iterator[str]:
    """The results viewer of the store at `database`, opened read-only, served on 127.0.0.1: its origin."""
    from assay.core.results_store import SqliteRunStore
    from assay.view.data import ViewData
    from assay.view.server import create_view_app

    store = SqliteRunStore(database, read_only=True)
    try:
        with serving(lambda binding: create_view_app(ViewData(store), binding)) as served:
            yield served
    finally:
        store.close()


@contextlib.contextmanager
def serving(make_app: Callable[[Any], Any], port: int = 0) -> Iterator[str]:
    """`make_app(binding)` served by uvicorn in a thread on loopback `port` (0: a free one); yields its origin."""
    import uvicorn

    from assay.web.app import Binding, bind_loopback_socket

    sock = bind_loopback_socket(port)
    binding = Binding(port=sock.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(make_app(binding), log_level="warning", access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    try:
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the local web app did not start")
            time.sleep(0.02)
        yield binding.origin
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
