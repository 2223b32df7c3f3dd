"""The dashboard in a real browser: Playwright driving the system Chromium (``make test`` installs it).

``playwright install`` would download a browser of its own; these tests use the one
Debian's ``chromium`` package puts at /usr/bin/chromium (or ``$TOOLCTX_CHROMIUM``).
Without it they skip locally and fail under CI, where they must run.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Chromium as the machine allows it: no sandbox as root, no GPU, and none of the
# background connections a closed network would refuse.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


def find_chromium() -> str | None:
    for candidate in (os.environ.get("TOOLCTX_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium")


# Per module, not per session: Playwright's sync API runs an event loop in this thread while
# it is open, and tests of other folders that start one of their own would find it running.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = find_chromium()
    if executable is None:
        message = "Chromium is not installed; `make test` installs it (scripts/ensure-chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert errors == [], f"the dashboard's script failed: {errors}"
