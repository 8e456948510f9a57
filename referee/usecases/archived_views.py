"""The archive and the live store read as one: what ``referee audit --archive`` checks.

The journal is the archived journal rows and the live ones merged in journal id order; the
verdicts and dead letters likewise. The projection (each game's newest state) and the games'
rules revisions are the live store's: ``referee archive`` carries every game's newest state
into it. A row both archived and live, or archived twice, is a difference; a file that does
not match its manifest stops the audit with the file named.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from referee.archive import TABLES, Archive, check_archive, iter_rows
from referee.store.views import JournalEntry, StoreViews

_JOURNAL_FIELDS = JournalEntry._fields


class ArchivedViews(StoreViews):
    """The store's views, with the archive's rows before and among the live ones."""

    def __init__(self, live: StoreViews, archive: Archive) -> None:
        super().__init__(live.engine)
        self.archive = archive
        self.problems: list[str] = []
        """What is wrong with the archive or between it and the live store."""
        self.archived_rows = 0

    def check(self) -> None:
        """Checks every manifest against the files (missing, extra, altered, duplicated)."""
        report = check_archive(self.archive)
        self.problems += [f"archive: {p}" for p in report.problems]

    def _archived_journal(self) -> Iterator[JournalEntry]:
        names = TABLES["journal"].names
        at = [names.index(f) for f in _JOURNAL_FIELDS]
        for row in iter_rows(self.archive, "journal"):
            self.archived_rows += 1
            yield JournalEntry(*(row[i] for i in at))  # type: ignore[arg-type]

    async def journal(self) -> AsyncIterator[JournalEntry]:
        """Yields the archived and the live journal rows, merged in journal id order."""
        archived = self._archived_journal()
        pending = next(archived, None)
        last = None
        async for live in super().journal():
            while pending is not None and pending.id <= live.id:
                if pending.id == live.id:
                    self.problems.append(f"journal row {live.id} is both archived and live")
                elif last is not None and pending.id == last:
                    self.problems.append(f"journal row {pending.id} is archived twice")
                last = pending.id
                yield pending
                pending = next(archived, None)
            last = live.id
            yield live
        while pending is not None:
            if last is not None and pending.id == last:
                self.problems.append(f"journal row {pending.id} is archived twice")
            last = pending.id
            yield pending
            pending = next(archived, None)

    async def verdict_bodies(self) -> list[tuple[str, str, int]]:
        """Returns (game id, canonical JSON, journal row) of every verdict, archived and live,
        in outbox order."""
        names = TABLES["verdicts"].names
        position, game, body, row = (
            names.index(c) for c in ("position", "game_id", "body", "journal_id")
        )
        archived = sorted(
            (int(r[position]), str(r[game]), str(r[body]), int(r[row]))  # type: ignore[call-overload]
            for r in iter_rows(self.archive, "verdicts")
        )
        seen = {p for p, _, _, _ in archived}
        if len(seen) != len(archived):
            self.problems.append("a verdict is archived twice")
        live = await self.positioned_verdicts()
        both = seen & {p for p, _, _, _ in live}
        if both:
            self.problems.append(f"{len(both)} verdicts are both archived and live")
        merged = sorted(archived + live)
        return [(g, b, j) for _, g, b, j in merged]

    async def dead_letter_bodies(self) -> dict[int, str]:
        """Returns each dead letter's ``EventRejected`` JSON by its journal row, archived and
        live."""
        names = TABLES["dead_letters"].names
        journal_id, body = names.index("journal_id"), names.index("body")
        found: dict[int, str] = {}
        for row in iter_rows(self.archive, "dead_letters"):
            key = int(row[journal_id])  # type: ignore[call-overload]
            if key in found:
                self.problems.append(f"the dead letter of journal row {key} is archived twice")
            found[key] = str(row[body])
        for key, text_ in (await super().dead_letter_bodies()).items():
            if key in found:
                self.problems.append(f"the dead letter of journal row {key} is archived and live")
            found[key] = text_
        return found
