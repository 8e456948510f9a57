"""What a section of the report is: typed results in, Markdown lines out."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import msgspec

from bench.context import Sizes

R = TypeVar("R")

Results = Mapping[str, Any]
"""What the scenarios recorded (``Context.results``), by scenario name."""


@dataclass(frozen=True)
class Page:
    """What a section may say besides its results: the run's sizes and where things are."""

    sizes: Sizes
    quick: bool
    img: str
    """The plots' directory, relative to the report."""
    kept: Path
    """Where the sections measured apart from the run are kept (``bench/``)."""


class Part(Protocol):
    """A part of the page: lines from the results (none when its scenario did not run)."""

    def lines(self, results: Results, page: Page) -> list[str]:
        """Returns this part's Markdown lines."""
        ...


def typed(results: Results, key: str, kind: type[R]) -> R | None:
    """Returns the results recorded under ``key`` as ``kind`` (None if there are none)."""
    found = results.get(key)
    if not found:
        return None
    return msgspec.convert(found, kind)


@dataclass(frozen=True)
class Section(Generic[R]):
    """A scenario's part of the report: its summary rows and its section, from its results."""

    read: Callable[[Results], R | None]
    """The scenario's results, typed (None when it did not run)."""
    section: Callable[[R, Page], list[str]]
    summary: Callable[[R], list[str]] | None = None
    plot: Callable[[R, Path], list[str]] | None = None
    """Draws its plots into a directory; returns their file names."""

    def rows(self, results: Results) -> list[str]:
        """Returns its rows of the summary table."""
        found = self.read(results)
        return [] if found is None or self.summary is None else self.summary(found)

    def lines(self, results: Results, page: Page) -> list[str]:
        """Returns its section's lines."""
        found = self.read(results)
        return [] if found is None else self.section(found, page)

    def plots(self, results: Results, img: Path) -> list[str]:
        """Draws its plots; returns their file names."""
        found = self.read(results)
        return [] if found is None or self.plot is None else self.plot(found, img)


@dataclass(frozen=True)
class Kept:
    """A section measured apart from the full run (by hand, or by ``--ab-before``), kept in
    a Markdown file of ``bench/`` as it was last written and copied under its title."""

    title: str
    name: str
    """The file's name in ``Page.kept``."""
    full_only: bool = True
    """Left out of a ``--quick`` report."""
    after: str | None = None
    """A scenario whose results it needs beside it (None: none)."""

    def lines(self, results: Results, page: Page) -> list[str]:
        """Returns the kept section under its title (nothing if the file is absent)."""
        path = page.kept / self.name
        if (self.full_only and page.quick) or not path.exists():
            return []
        if self.after is not None and not results.get(self.after):
            return []
        return [self.title, "", *path.read_text(encoding="utf-8").strip().splitlines(), ""]
