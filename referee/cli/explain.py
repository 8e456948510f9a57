"""``referee explain``: the evidence behind every verdict of a log or of the store.

Text for people by default (each game's story, told once the game is over or the log ends),
``--json`` for tools (one object a verdict, as it comes). The records are read as ``replay``
reads a log and as ``audit`` reads the store, and judged by the same referee.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from referee.cli.args import Commands, close_output, integer, open_log, open_output, rules_revision
from referee.cli.database import (
    Database,
    choose_database,
    engine_of,
    reaching,
    require_schema,
    settings_or_exit,
)
from referee.cli.desk import add_html_flag
from referee.cli.errors import EXIT_OK, UsageError
from referee.contracts.parse import DEFAULT_MAX_EVENT_BYTES
from referee.service.limits import MAX_EVENT_BYTES_CAP

if TYPE_CHECKING:  # the explanations' modules load when it runs; the store's for a store only
    from referee.contracts.rejection import FileSource
    from referee.service.settings import Settings
    from referee.usecases.explanations import Chapter, Explainer, Request


def add(commands: Commands) -> None:
    """Adds ``referee explain``."""
    parser = commands.add(
        "explain", "the evidence behind every verdict, with the rule it applies", run
    )
    parser.add_argument(
        "log", nargs="?", metavar="LOG", help="the event log (- for stdin); or --database"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--database",
        nargs="?",
        const="",
        metavar="URL",
        help="explain the store's journal, read as audit reads it (without a URL: "
        "$REFEREE_DATABASE_URL)",
    )
    where.add_argument("--embedded", action="store_true", help="the embedded PostgreSQL's journal")
    parser.add_argument("--game", metavar="ID", help="only this game")
    parser.add_argument(
        "--seq", type=integer(1), metavar="N", help="only the verdicts of this event (with --game)"
    )
    parser.add_argument(
        "--as",
        dest="reader",
        metavar="WHO",
        help="a player's view (their own hand; every hand once a round is over) or "
        "'spectator' (no hand before its round ends); default: the auditor's, every hand",
    )
    parser.add_argument(
        "--json", action="store_true", help="one JSON object a verdict (schemas/Explanation)"
    )
    parser.add_argument("--output", type=Path, help="default: stdout")
    parser.add_argument(
        "--max-event-bytes",
        type=integer(1, MAX_EVENT_BYTES_CAP, "64 MiB"),
        default=DEFAULT_MAX_EVENT_BYTES,
        help="size limit per event, as the log was replayed with",
    )
    parser.add_argument(
        "--rules-revision",
        type=rules_revision,
        metavar="N",
        help="the rules revision a LOG's games are judged under, as it was replayed with "
        "(default: the newest; from a store, each game's own)",
    )
    add_html_flag(parser)


def run(args: argparse.Namespace) -> int:
    """Explains every verdict of a LOG, or of the store's journal (``--database``)."""
    from referee.domain.secrecy import viewer
    from referee.processing.referee import Referee
    from referee.usecases.explanations import Explainer, Request, explain_records

    if args.seq is not None and args.game is None:
        raise UsageError("--seq N needs --game ID: a seq is a place in one game's stream")
    database = args.database
    if (
        database
        and "://" not in database
        and (Path(database).exists() or database.endswith(".jsonl"))
    ):
        raise UsageError(
            f"--database {database} is a log, not a URL: referee explain {database}, or "
            "referee explain --database [URL] for the store"
        )
    from_store = database is not None or args.embedded
    if from_store and args.log is not None:
        raise UsageError("give a LOG or --database/--embedded, not both")
    if not from_store and args.log is None:
        raise UsageError("nothing to explain: give a LOG (- for standard input) or --database")
    request = Request(args.game, args.seq, viewer(args.reader))
    explainer = Explainer(request, Referee(args.max_event_bytes))
    if args.rules_revision is not None:
        if from_store:
            raise UsageError(
                "--rules-revision is for a LOG: a store's games are explained under the "
                "revision each was pinned to"
            )
        explainer.referee.rules_revision = args.rules_revision
    if getattr(args, "html", None) is not None:  # --html FILE: the page of one game
        from referee.cli.desk import write_page

        return write_page(args, explainer.referee, from_store=from_store)
    if from_store:
        settings = settings_or_exit()
        db = choose_database(args.database or None, embedded=args.embedded, settings=settings)
        where = db.shown
    else:
        log = open_log(args.log)
        where = str(log) if isinstance(log, Path) else "standard input"
    out = open_output(args.output, "--output", log=None if from_store else log)
    try:
        writer = _Writer(out, request, json=args.json)
        if from_store:
            _from_store(db, settings, explainer, writer)
        else:
            for chapter in explain_records(_records(log, where), explainer):
                writer.write(chapter)
        writer.close()
    finally:
        close_output(out)
    check_found(explainer, request, where)
    return EXIT_OK


def _from_store(db: Database, settings: Settings, explainer: Explainer, writer: _Writer) -> None:
    """Explains the store's journal, read as ``audit`` reads it (exit 3 if unreachable)."""
    import asyncio

    from referee.store.database import check_reachable
    from referee.store.views import StoreViews
    from referee.usecases.explanations import explain_store

    async def work() -> None:
        engine = engine_of(db, settings)
        try:
            await check_reachable(engine)
            await require_schema(engine, db, "explains")
            views = StoreViews(engine)
            async for chapter in explain_store(views, explainer, settings.max_event_bytes):
                writer.write(chapter)
        finally:
            await engine.dispose()

    with reaching(db):
        asyncio.run(work())


def _records(log: Path | BinaryIO, name: str) -> Iterator[tuple[bytes, FileSource]]:
    from referee.contracts.rejection import FileSource
    from referee.usecases.replay import Records, opened

    stream = opened(log)
    try:
        for number, line in Records(stream):
            yield line, FileSource(name, number)
    finally:
        if isinstance(log, Path):
            stream.close()


class _Writer:
    """Writes chapters: JSON as they come; text a game at a time, once the game is over (its
    ``GameWon``) or the log has ended, so that the games of a log do not interleave."""

    def __init__(self, out: BinaryIO, request: Request, *, json: bool) -> None:
        self.out = out
        self.request = request
        self.json = json
        self.stories: dict[str, list[str]] = {}

    def write(self, chapter: Chapter) -> None:
        from referee.usecases.explanations import Explained

        if self.json:
            if isinstance(chapter, Explained):
                from referee.contracts.explanation import explanation_wire
                from referee.contracts.verdicts import encode_canonical

                wire = explanation_wire(
                    chapter.verdict,
                    chapter.evidence,
                    view=self.request.reader.name,
                    action=chapter.action,
                )
                self.out.write(encode_canonical(wire) + b"\n")
            return
        from referee.cli.explain_text import render

        story = self.stories.setdefault(chapter.game_id, [])
        story += render(chapter)
        if isinstance(chapter, Explained) and chapter.verdict.__struct_config__.tag == "GameWon":
            self._flush(chapter.game_id)

    def _flush(self, game_id: str) -> None:
        story = self.stories.pop(game_id)
        self.out.write(("\n".join(story) + "\n\n").encode())

    def close(self) -> None:
        for game_id in list(self.stories):
            self._flush(game_id)


def check_found(explainer: Explainer, request: Request, where: str) -> None:
    """Fails (exit 2) when what was asked for is not there; says so when an event asked for
    gave no verdict."""
    from referee.domain.secrecy import SPECTATOR
    from referee.processing.outcome import Outcome

    game = request.game_id
    reader = request.reader
    if game is not None and explainer.last_seq(game) is None:
        raise UsageError(f"no game {game!r} in {where}")
    if reader.player is not None and not explainer.seats_reader():
        here = f"game {game!r}" if game is not None else f"any game of {where}"
        raise UsageError(
            f"--as {reader.player}: no such player at {here}; give a player of the game, "
            f"or {SPECTATOR}"
        )
    if request.seq is None or game is None:
        return
    asked = explainer.asked
    if asked is None:
        last = explainer.last_seq(game)
        raise UsageError(f"game {game!r} has no event at seq {request.seq} (its seqs: 1 to {last})")
    if asked.outcome is Outcome.REJECTED:
        reason = "" if asked.reason is None else f" ({asked.reason.value})"
        print(
            f"seq {request.seq} of game {game!r} was rejected{reason}: no verdict to explain",
            file=sys.stderr,
        )
    elif explainer.explained == 0:
        print(
            f"seq {request.seq} of game {game!r} ({asked.kind}) gave no verdict: "
            "nothing to explain",
            file=sys.stderr,
        )
