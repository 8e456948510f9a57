"""A real browser for the page tests: Debian's headless Chromium, driven by Selenium through
Debian's chromedriver (never a driver or a browser that Selenium would download).

scripts/test installs ``chromium`` and ``chromium-driver`` when they are missing. Without
them the tests are skipped on a developer's machine and fail under CI, as the integration
tests do when a service is missing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.chrome.webdriver import WebDriver

FLAGS = (
    "--headless",
    "--no-sandbox",  # the suite runs as root on CI
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1300,1000",
)


def _installed(name: str, *paths: str) -> str:
    found = shutil.which(name) or next((p for p in paths if Path(p).exists()), None)
    if found:
        return found
    message = f"{name} is missing (apt-get install chromium chromium-driver; scripts/test does)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    """A headless Chromium, one for the session."""
    chromium = _installed("chromium", "/usr/bin/chromium")
    driver_path = _installed("chromedriver", "/usr/bin/chromedriver")
    options = Options()
    options.binary_location = chromium
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="session")
def screenshots() -> Path | None:
    """Where the page tests put their screenshots, only when asked
    (``REFEREE_SCREENSHOTS=docs/img``): CI runs leave the tree as it was."""
    where = os.environ.get("REFEREE_SCREENSHOTS")
    if not where:
        return None
    path = Path(where)
    path.mkdir(parents=True, exist_ok=True)
    return path
