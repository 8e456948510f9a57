"""``referee audit``: every stored verdict, dead letter and game state re-derived from the
journal and compared byte for byte; exit 1 on a difference (docs/releases.md, "What the
audit says")."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import TYPE_CHECKING

from referee.cli.args import Commands, rules_revision
from referee.cli.database import (
    Database,
    choose_database,
    database_flags,
    engine_of,
    probe,
    reaching,
    require_schema,
    settings_or_exit,
)
from referee.cli.errors import EXIT_DIFFERENCE, EXIT_OK, UsageError

if TYPE_CHECKING:  # the audit's modules load when it runs, not when the parser is built
    from referee.service.settings import Settings
    from referee.usecases.audit import AuditReport


def add(commands: Commands) -> None:
    """Adds ``referee audit``."""
    audit = commands.add("audit", "re-derive every stored verdict from the journal", run)
    database_flags(audit)
    audit.add_argument("--json", action="store_true", help="print the report as JSON")
    audit.add_argument(
        "--revision",
        type=rules_revision,
        metavar="N",
        help="a differential audit: judge every game under candidate rules revision N (not "
        "its own) and list the games whose verdicts it would change, with the first "
        "differing verdict of each (exit 1 if any)",
    )
    audit.add_argument(
        "--archive",
        nargs="?",
        const="",
        metavar="URL",
        help="read the archive (a directory or s3://bucket/prefix; without a URL: "
        "$REFEREE_ARCHIVE_URL) and the store as one journal; check every archived file "
        "against its manifest",
    )
    audit.add_argument(
        "--topics",
        action="store_true",
        help="also compare the store with what the output topics hold (Kafka from the "
        "REFEREE_KAFKA_* settings): every record on them the store's, once and in its order; "
        "a store that lost commits the topics hold fails (docs/reliability.md)",
    )


def run(args: argparse.Namespace) -> int:
    """Says which database and schema it checked; exits 1 on a difference."""
    import asyncio

    settings = settings_or_exit()
    db = choose_database(args.database, embedded=args.embedded, settings=settings)
    probe(db, settings)
    archive = getattr(args, "archive", None)
    if archive == "":
        archive = settings.archive_url
        if not archive:
            raise UsageError("--archive needs a URL, or REFEREE_ARCHIVE_URL set")
    with reaching(db):
        revision, report = asyncio.run(_audit(db, settings, args.revision, archive))
    topics = None
    if args.topics:
        from referee.cli.topics_audit import audit_topics

        with reaching(db):
            topics = asyncio.run(audit_topics(db.url, settings))
    passed = report.passed and (topics is None or topics.passed)
    if args.json:
        document = {
            "database": db.shown,
            "schema_revision": revision,
            **dataclasses.asdict(report),
            "passed": passed,
        }
        if topics is not None:
            document["topics"] = {**dataclasses.asdict(topics), "passed": topics.passed}
        print(json.dumps(document, indent=2))
    else:
        print(f"database: {db.shown}\nschema revision: {revision}\n{report.summary()}")
        if topics is not None:
            print("\n".join(topics.lines()))
    return EXIT_OK if passed else EXIT_DIFFERENCE


async def _audit(
    db: Database, settings: Settings, candidate: int | None = None, archive: str | None = None
) -> tuple[str, AuditReport]:
    from referee.store.views import StoreViews
    from referee.usecases.audit import AuditReport
    from referee.usecases.audit import audit as run_audit

    engine = engine_of(db, settings)
    try:
        revision = await require_schema(engine, db, "audits")
        views = StoreViews(engine)
        if archive is None:
            return revision, await run_audit(views, settings.max_event_bytes, candidate)
        from referee.archive import ArchiveError, VerificationError, open_archive
        from referee.archive.storage import LocalArchive
        from referee.cli.archive import archive_failure
        from referee.usecases.archived_views import ArchivedViews

        try:
            opened = open_archive(archive)
        except ArchiveError as error:
            raise UsageError(f"--archive {archive}: {error}") from None
        if isinstance(opened, LocalArchive) and not opened.root.is_dir():
            raise UsageError(f"--archive {archive}: no such directory")
        both = ArchivedViews(views, opened)
        try:
            both.check()
            report = await run_audit(both, settings.max_event_bytes, candidate)
        except VerificationError as error:  # a file unlike its manifest: said, not judged
            report = AuditReport(candidate=candidate)
            report.differences.append(f"archive: {error}")
        except ArchiveError as error:
            raise archive_failure(archive, error) from None
        report.differences[:0] = both.problems
        report.archived_rows = both.archived_rows
        return revision, report
    finally:
        await engine.dispose()
