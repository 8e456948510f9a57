"""The browser of the page tests, for the desk's tests on a real PostgreSQL."""

from tests.browser.conftest import browser, screenshots

__all__ = ["browser", "screenshots"]
