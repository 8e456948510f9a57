"""The migrations' revisions as the referee reads them at start, held to Alembic's own."""

from __future__ import annotations

from alembic.script import ScriptDirectory

from referee.store.database import MIGRATIONS, known_revisions, newest_revision


def test_the_revisions_read_from_the_files_are_alembics() -> None:
    script = ScriptDirectory(str(MIGRATIONS))
    assert known_revisions() == {r.revision for r in script.walk_revisions()}
    assert newest_revision() == script.get_current_head()
    for revision in script.walk_revisions():
        assert revision.down_revision is None or revision.down_revision in known_revisions()
