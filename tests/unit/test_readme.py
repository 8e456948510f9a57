"""The README documents exactly the settings the service reads, and its two commands exist."""

from __future__ import annotations

import re
from pathlib import Path

from referee.service.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_configuration_table_lists_every_setting_and_nothing_else() -> None:
    documented = set(re.findall(r"^\| `(REFEREE_[A-Z0-9_]+)` \|", README, flags=re.MULTILINE))
    actual = {f"REFEREE_{name.upper()}" for name in Settings.model_fields}
    assert documented == actual


def test_the_two_quick_start_commands_are_executable_scripts() -> None:
    for command in ("scripts/demo", "scripts/test"):
        assert f"{command}" in README
        path = ROOT / command
        assert path.is_file()
        assert path.stat().st_mode & 0o111, f"{command} is not executable"


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/test" in ci


def test_every_setting_the_readme_names_exists() -> None:
    named = set(re.findall(r"\bREFEREE_[A-Z0-9_]*[A-Z0-9]\b", README))
    actual = {f"REFEREE_{name.upper()}" for name in Settings.model_fields}
    assert named - actual == set()
    assert len(named) > 20


def test_every_file_the_readme_links_to_exists() -> None:
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [t for t in targets if "://" not in t]
    assert "docs/consumers.md" in local
    for target in local:
        assert (ROOT / target).exists(), target
