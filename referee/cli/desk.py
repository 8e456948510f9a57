"""``referee explain ... --html FILE`` (one game's page) and ``referee desk`` (the pages of the
store, served to a browser). The pages are made by ``referee/desk/``; this module parses,
chooses the database and the view, and writes or serves."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from referee.cli.args import Commands, close_output, integer, open_log, open_output
from referee.cli.errors import EXIT_OK, UnavailableError, UsageError

if TYPE_CHECKING:
    import socket

    from referee.contracts.rejection import FileSource
    from referee.desk.page import Words
    from referee.desk.steps import GameSteps
    from referee.processing.referee import Referee

INSUFFICIENT_PRIVILEGE = "42501"
DEFAULT_PORT = 8470
LOOPBACK = "127.0.0.1"


def add_html_flag(explain: argparse.ArgumentParser) -> None:
    """Adds ``--html FILE`` to ``referee explain``."""
    explain.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="write the page of one game (--game) as one self-contained HTML file: the board "
        "drawn at every step, the evidence of every verdict on it (- for stdout)",
    )


def add(commands: Commands) -> None:
    """Adds ``referee desk``."""
    desk = commands.add(
        "desk", "serve the store's games as pages to a browser, read only", desk_command
    )
    where = desk.add_mutually_exclusive_group()
    where.add_argument(
        "--database",
        nargs="?",
        const="",
        metavar="URL",
        help="the store (without a URL: $REFEREE_DATABASE_URL); its login must be a member "
        "of referee_reader, as which the desk reads",
    )
    where.add_argument("--embedded", action="store_true", help="the embedded PostgreSQL")
    desk.add_argument(
        "--host",
        default=LOOPBACK,
        help=f"the address to listen on (default: {LOOPBACK}, this machine only)",
    )
    desk.add_argument(
        "--port",
        type=integer(0, 65535),
        default=DEFAULT_PORT,
        help=f"the port (default: {DEFAULT_PORT}; 0: any free port, printed at start)",
    )
    desk.add_argument(
        "--auditor",
        action="store_true",
        help="also serve the auditor's view (every hand at every moment); without it only "
        "a spectator's and each player's",
    )


def words() -> Words:
    """Returns the words of ``referee explain`` the pages use."""
    from referee.cli.explain_text import facts, opened
    from referee.desk.page import Words

    return Words(opened, facts)


def write_page(args: argparse.Namespace, referee: Referee, *, from_store: bool) -> int:
    """``referee explain ... --html FILE``: the page of ``--game`` under ``--as``."""
    from referee.desk.page import page
    from referee.desk.steps import NotSeatedError, steps_of
    from referee.domain.secrecy import SPECTATOR, viewer

    if args.game is None:
        raise UsageError("--html writes the page of one game: give --game ID")
    if args.json:
        raise UsageError("give --html FILE or --json, not both")
    if args.seq is not None:
        raise UsageError("--html writes every step of the game: open FILE#step-N for seq N")
    if args.output is not None:
        raise UsageError("--html FILE is where the page goes; --output is for text and JSON")
    game_id: str = args.game
    reader = viewer(args.reader)
    log = None
    try:
        if from_store:
            steps, where = _from_store(args, game_id, reader)
        else:
            log = open_log(args.log)
            where = str(log) if isinstance(log, Path) else "standard input"
            steps = steps_of(_records(log, where), game_id, reader, referee)
    except NotSeatedError:
        raise UsageError(
            f"--as {reader.player}: no such player at game {game_id!r}; give a player of the "
            f"game, or {SPECTATOR}"
        ) from None
    if steps is None:
        raise UsageError(f"no game {game_id!r} in {where}")
    out = open_output(args.html, "--html", log=log)
    try:
        out.write(page(steps, words()).encode())
    finally:
        close_output(out)
    verdicts = sum(len(s.verdicts) for s in steps.steps)
    print(
        f"wrote {args.html}: game {game_id!r} as {steps.view} sees it, {len(steps.steps)} "
        f"steps, {verdicts} verdicts",
        file=sys.stderr,
    )
    return EXIT_OK


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


def _from_store(
    args: argparse.Namespace, game_id: str, reader: object
) -> tuple[GameSteps | None, str]:
    from referee.cli.database import (
        choose_database,
        reaching,
        require_schema,
        settings_or_exit,
    )
    from referee.desk.steps import pinned, steps_of_rows, store_rows
    from referee.domain.secrecy import Viewer
    from referee.store.database import check_reachable, create_engine
    from referee.store.game_views import GameViews

    assert isinstance(reader, Viewer)
    settings = settings_or_exit()
    db = choose_database(args.database or None, embedded=args.embedded, settings=settings)

    async def run() -> GameSteps | None:
        engine = create_engine(db.url, settings.db_pool_size, settings.db_max_overflow)
        try:
            await check_reachable(engine)
            await require_schema(engine, db, "explains")
            revision, rows = await store_rows(GameViews(engine), game_id)
        finally:
            await engine.dispose()
        referee = pinned(game_id, revision, settings.max_event_bytes)
        return steps_of_rows(rows, game_id, reader, referee, settings.max_event_bytes)

    with reaching(db):
        import asyncio

        return asyncio.run(run()), db.shown


def desk_command(args: argparse.Namespace) -> int:
    """``referee desk``: serves the pages of the store until stopped (Ctrl-C, SIGTERM)."""
    from referee.cli.database import (
        choose_database,
        reaching,
        require_schema,
        settings_or_exit,
    )
    from referee.desk.app import desk_app
    from referee.store.database import check_reachable, create_engine
    from referee.store.errors import sqlstate
    from referee.store.game_views import READER_ROLE, GameViews, as_reader

    settings = settings_or_exit()
    db = choose_database(args.database or None, embedded=args.embedded, settings=settings)
    listener = _listen(args.host, args.port)
    host, port = listener.getsockname()[:2]

    async def run() -> None:
        import uvicorn

        engine = as_reader(create_engine(db.url, settings.db_pool_size, settings.db_max_overflow))
        try:
            try:
                await check_reachable(engine)
            except Exception as failed:
                if sqlstate(failed) == INSUFFICIENT_PRIVILEGE:
                    raise UnavailableError(
                        f"PostgreSQL at {db.shown}: the desk reads as {READER_ROLE}, and this "
                        f"login is not a member of it: GRANT {READER_ROLE} TO the login"
                    ) from None
                raise
            await require_schema(engine, db, "serves")
            app = desk_app(
                GameViews(engine),
                words(),
                auditor=args.auditor,
                max_event_bytes=settings.max_event_bytes,
            )
            config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
            server = uvicorn.Server(config)
            views = "spectator, players, auditor" if args.auditor else "spectator, players"
            shown = f"[{host}]" if ":" in host else host
            print(
                f"referee desk: http://{shown}:{port}/ (read only as {READER_ROLE}; views: "
                f"{views}; {db.shown})",
                file=sys.stderr,
                flush=True,
            )
            await server.serve(sockets=[listener])
        finally:
            await engine.dispose()

    try:
        with reaching(db):
            import asyncio

            asyncio.run(run())
    finally:
        listener.close()
    return EXIT_OK


def _listen(host: str, port: int) -> socket.socket:
    import socket

    """Binds the desk's socket (exit 3 if the port is taken or the address is not ours)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as bad:
        raise UsageError(f"--host {host}: {bad.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as failed:
        sock.close()
        raise UnavailableError(
            f"cannot listen on {host}:{port}: {failed.strerror or failed}"
        ) from None
    sock.set_inheritable(True)
    return sock
