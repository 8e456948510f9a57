"""CHANGELOG.md keeps up with the package: its version, its rules revisions, its migrations.

A release that bumps the version without a section, adds a rules revision or a migration
without saying so, or names one that does not exist fails here (docs/releases.md).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from referee.domain.revisions import REVISIONS

ROOT = Path(__file__).resolve().parents[2]
CHANGELOG = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")
PARTS = ("Contract", "Rules revisions", "Migrations")
UNRELEASED = "Unreleased"
"""The heading of what is merged but not yet released: first if present, parts as a release's."""


def releases() -> dict[str, dict[str, str]]:
    """version -> part -> text, in the file's order (newest first)."""
    found: dict[str, dict[str, str]] = {}
    for block in re.split(r"^## ", CHANGELOG, flags=re.MULTILINE)[1:]:
        heading, _, body = block.partition("\n")
        parts = re.split(r"^### ", body, flags=re.MULTILINE)
        found[heading.strip()] = {
            p.partition("\n")[0].strip(): p.partition("\n")[2] for p in parts[1:]
        }
    return found


def test_the_newest_section_is_the_packages_version() -> None:
    """The first section may be ``Unreleased`` (what main holds past the version: it takes
    the version's number when one is cut); the next is the package's version."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    versions = list(releases())
    if versions[0] == UNRELEASED:
        versions = versions[1:]
    assert UNRELEASED not in versions, "Unreleased comes first, once"
    assert versions[0] == project["version"]
    assert all(SEMVER.fullmatch(v) for v in versions), versions
    keys = [tuple(int(x) for x in v.split(".")) for v in versions]
    assert keys == sorted(keys, reverse=True), "newest first, each version once"
    assert len(set(keys)) == len(keys)


def test_every_release_says_its_contract_rules_and_migrations() -> None:
    for version, parts in releases().items():
        assert tuple(parts) == PARTS, (version, tuple(parts))


def test_every_migration_is_in_exactly_one_release_and_no_other_is_named() -> None:
    files = {p.name[:4] for p in (ROOT / "migrations" / "versions").glob("[0-9]*.py")}
    named: list[str] = []
    for parts in releases().values():
        named += re.findall(r"^- (\d{4}) ", parts["Migrations"], flags=re.MULTILINE)
    assert sorted(named) == sorted(files)


def test_every_rules_revision_is_named_in_a_release() -> None:
    text = " ".join(parts["Rules revisions"] for parts in releases().values())
    for number in REVISIONS:
        assert re.search(rf"\b[Rr]evision {number}\b", text), number
