"""The embedded PostgreSQL is the optional extra ``referee[embedded]``.

Without ``pgserver`` installed, asking for the embedded store fails with one line that
names the extra, never an ImportError traceback. ``sys.modules["pgserver"] = None`` makes
``import pgserver`` raise ImportError exactly as an absent package does.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from referee.cli.errors import EXIT_UNAVAILABLE
from referee.cli.main import main
from referee.store.database import EMBEDDED_MISSING, EmbeddedPostgresMissingError, embedded_url

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_pgserver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pgserver", None)


@pytest.mark.usefixtures("no_pgserver")
def test_embedded_url_names_the_extra_when_pgserver_is_missing(tmp_path: Path) -> None:
    with pytest.raises(EmbeddedPostgresMissingError) as caught:
        embedded_url(tmp_path)
    message = str(caught.value)
    assert message.startswith(
        "the embedded PostgreSQL needs the 'embedded' extra: pip install 'referee[embedded]'"
    )
    assert "\n" not in message
    # `from None`: the ImportError is not chained into the report
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__ is True
    assert not (tmp_path / "pgdata").exists(), "nothing is created before the check"


@pytest.mark.usefixtures("no_pgserver")
def test_the_cli_exits_with_that_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("REFEREE_DATABASE_URL", raising=False)
    monkeypatch.setenv("REFEREE_DATA_DIR", str(tmp_path))
    assert main(["migrate", "--embedded"]) == EXIT_UNAVAILABLE
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == f"referee migrate: {EMBEDDED_MISSING}"
    assert "Traceback" not in err


def test_a_configured_url_never_needs_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service with REFEREE_DATABASE_URL (the image, the chart) never imports pgserver."""
    from referee.cli.database import choose_database
    from referee.service.settings import Settings

    monkeypatch.setitem(sys.modules, "pgserver", None)
    monkeypatch.setenv("REFEREE_DATABASE_URL", "postgresql://u:p@db:5432/referee")
    monkeypatch.setenv("REFEREE_DATA_DIR", str(tmp_path))
    db = choose_database(None, embedded=False, settings=Settings())
    assert db.url == "postgresql://u:p@db:5432/referee"
    assert db.shown == "postgresql://u:***@db:5432/referee"


def test_pgserver_is_an_extra_not_a_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = [d.split(">")[0].split("=")[0].split("[")[0].strip() for d in project["dependencies"]]
    assert "pgserver" not in names
    assert any(d.startswith("pgserver") for d in project["optional-dependencies"]["embedded"])
    for script in ("scripts/bootstrap.sh",):
        assert "--extra embedded" in (ROOT / script).read_text(encoding="utf-8"), script
