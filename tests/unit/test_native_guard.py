"""The guard against a compiled module whose source changed after the build."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from referee._native_guard import StaleNativeBuildError, check, stale_sources


def tree_with_manifest(root: Path) -> Path:
    package = root / "referee"
    (package / "domain").mkdir(parents=True)
    source = package / "domain" / "judge.py"
    source.write_text("RULE = 1\n")
    sha = hashlib.sha256(source.read_bytes()).hexdigest()
    (package / "_native.json").write_text(json.dumps({"sources": {"referee/domain/judge.py": sha}}))
    return package


def test_a_tree_without_a_build_passes(tmp_path: Path) -> None:
    (tmp_path / "referee").mkdir()
    assert stale_sources(tmp_path / "referee") == []
    check(tmp_path / "referee")


def test_an_unchanged_build_passes(tmp_path: Path) -> None:
    package = tree_with_manifest(tmp_path)
    assert stale_sources(package) == []
    check(package)


def test_an_edited_source_is_refused_with_the_remedy(tmp_path: Path) -> None:
    package = tree_with_manifest(tmp_path)
    (package / "domain" / "judge.py").write_text("RULE = 2\n")
    assert stale_sources(package) == ["referee/domain/judge.py"]
    with pytest.raises(StaleNativeBuildError, match=r"judge\.py changed after .* tools\.native"):
        check(package)


def test_a_removed_source_is_refused(tmp_path: Path) -> None:
    package = tree_with_manifest(tmp_path)
    (package / "domain" / "judge.py").unlink()
    assert stale_sources(package) == ["referee/domain/judge.py"]
