"""The dispute desk: the store's games found by id, player and foul, and each game's page
under a chosen view, served to a browser (Starlette).

It only reads (``GameViews``, whose connections act as ``referee_reader`` in read-only
transactions). The views it serves are a spectator's and each player's; the auditor's
(every hand at every moment) only when its configuration allows it (``auditor=True``). A
page is folded from the game's journal on each request, off the event loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote, urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from referee.desk.page import CSP, STYLE, Words, page
from referee.desk.steps import GameSteps, NotSeatedError, pinned, steps_of_rows, store_rows
from referee.desk.text import attr, esc
from referee.domain.secrecy import AUDITOR, SPECTATOR, viewer
from referee.store.game_views import GameSummary, GameViews

HEADERS = {
    "Content-Security-Policy": f"{CSP}; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
FOUND_AT_MOST = 200


def game_path(game_id: str, view: str | None = None) -> str:
    """Returns the desk's address of a game's page (under ``view``)."""
    path = "/games/" + quote(game_id, safe="")
    return path if view is None else f"{path}?{urlencode({'view': view})}"


def desk_app(views: GameViews, words: Words, *, auditor: bool, max_event_bytes: int) -> Starlette:
    """Returns the desk's web application."""

    async def search(request: Request) -> Response:
        query = request.query_params
        game = query.get("game") or None
        player = query.get("player") or None
        foul = query.get("foul") or None
        found = await views.find(game=game, player=player, foul=foul, limit=FOUND_AT_MOST)
        kinds = await views.foul_kinds()
        body = _search_page(found, kinds, game, player, foul, auditor=auditor)
        return HTMLResponse(body, headers=HEADERS)

    async def game_page(request: Request) -> Response:
        game_id = request.path_params["game_id"]
        name = request.query_params.get("view") or SPECTATOR
        if name == "auditor":
            if not auditor:
                return _refusal(
                    403,
                    "the auditor's view (every hand at every moment) is not served by this "
                    "desk: it is started without --auditor",
                )
            reader = AUDITOR
        else:
            reader = viewer(name)
        revision, rows = await store_rows(views, game_id)
        if not rows:
            return _refusal(404, f"no game {game_id!r} in the store")
        referee = pinned(game_id, revision, max_event_bytes)
        try:
            steps = await run_in_threadpool(
                steps_of_rows, rows, game_id, reader, referee, max_event_bytes
            )
        except NotSeatedError:
            return _refusal(404, f"{name!r} does not sit at game {game_id!r}")
        if steps is None:
            return _refusal(404, f"no game {game_id!r} in the store")
        return HTMLResponse(page(steps, words, _links(steps, auditor=auditor)), headers=HEADERS)

    return Starlette(
        routes=[
            Route("/", search, methods=["GET"]),
            Route("/games/{game_id:path}", game_page, methods=["GET"]),
        ]
    )


def _links(steps: GameSteps, *, auditor: bool) -> list[tuple[str, str]]:
    game_id = steps.game_id
    players = steps.steps[0].seats if steps.steps else ()
    links = [("find a game", "/"), ("as a spectator", game_path(game_id, SPECTATOR))]
    links += [(f"as {s.player}", game_path(game_id, s.player)) for s in players]
    if auditor:
        links.append(("as the auditor", game_path(game_id, "auditor")))
    return links


def _refusal(status: int, message: str) -> Response:
    body = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{status}</title>'
        f"<style>{STYLE}</style></head><body><header><h1>{status}</h1></header><main>"
        f'<p class="refusal">{esc(message)}</p><p><a href="/">find a game</a></p></main>'
        "</body></html>"
    )
    return HTMLResponse(body, status_code=status, headers=HEADERS)


def _search_page(
    found: Sequence[GameSummary],
    kinds: Sequence[str],
    game: str | None,
    player: str | None,
    foul: str | None,
    *,
    auditor: bool,
) -> str:
    options = "".join(
        f'<option value="{attr(k)}"{" selected" if k == foul else ""}>{esc(k)}</option>'
        for k in kinds
    )
    rows = []
    for g in found:
        views = [("spectator", game_path(g.game_id, SPECTATOR))]
        views += [(p, game_path(g.game_id, p)) for p in g.players]
        if auditor:
            views.append(("auditor", game_path(g.game_id, "auditor")))
        opened = " ".join(f'<a href="{attr(href)}">{esc(label)}</a>' for label, href in views)
        rows.append(
            f'<tr data-game="{attr(g.game_id)}"><td><a class="game" '
            f'href="{attr(game_path(g.game_id, SPECTATOR))}">{esc(g.game_id)}</a></td>'
            f'<td>{esc(", ".join(g.players))}</td><td class="n">{g.last_seq}</td>'
            f'<td>{esc(g.winner or "")}</td><td class="n">{g.fouls}</td><td>{opened}</td></tr>'
        )
    more = (
        f"<p>the first {FOUND_AT_MOST} shown: narrow the search</p>"
        if len(found) >= FOUND_AT_MOST
        else ""
    )
    table = (
        '<table class="found"><tr><th>game</th><th>players</th><th>events</th><th>winner</th>'
        f"<th>fouls</th><th>open the page as</th></tr>{''.join(rows)}</table>{more}"
        if rows
        else "<p>no game found</p>"
    )
    view_note = (
        "views: a spectator's, each player's, and the auditor's"
        if auditor
        else "views: a spectator's and each player's (the auditor's is not served here)"
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>the dispute desk</title><style>{STYLE}</style></head><body>"
        "<header><h1>the dispute desk</h1>"
        f'<p class="view">read only, as referee_reader; {esc(view_note)}</p></header><main>'
        '<form method="get" action="/" class="search">'
        f'<label>game id contains <input name="game" value="{attr(game or "")}"></label> '
        f'<label>player <input name="player" value="{attr(player or "")}"></label> '
        f'<label>foul <select name="foul"><option value="">any</option>{options}</select></label> '
        '<button type="submit">find</button></form>'
        f"{table}</main></body></html>"
    )
