"""``referee audit``, a use case: every verdict re-derived from the journal, compared byte for
byte (the store's reads in ``store/views.py``, the judging by a fresh ``Referee``)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import msgspec

from referee.contracts.rejection import EventRejected, FileSource, KafkaSource, Source
from referee.contracts.state_codec import decode_state, encode_state
from referee.contracts.verdicts import encode_canonical
from referee.domain.errors import RejectionReason
from referee.processing.referee import Referee
from referee.store.views import StoreViews

FILE_PREFIX = "file:"


@dataclass(slots=True)
class AuditReport:
    """What the audit compared and every difference it found."""

    journal_rows: int = 0
    games: int = 0
    verdicts_stored: int = 0
    verdicts_derived: int = 0
    dead_letters_stored: int = 0
    dead_letters_derived: int = 0
    quarantined: int = 0
    """Records the referee had failed on (``internal_error``): compared, not judged again."""
    rules_revisions: dict[str, int] = field(default_factory=dict)
    """Games judged under each rules revision (a key per revision, as text for JSON)."""
    started_by: dict[str, int] = field(default_factory=dict)
    """Games by the referee version that started them (``before 0.2.0``: no record)."""
    candidate: int | None = None
    """A differential audit's candidate rules revision: every game judged under it rather
    than its own (``referee audit --revision N``); None: each game under its own."""
    changed_games: list[str] = field(default_factory=list)
    """The games whose verdicts differ from the stored ones, in game id order."""
    differences: list[str] = field(default_factory=list)
    archived_rows: int | None = None
    """Journal rows read from the archive (``referee audit --archive``); None: no archive."""

    @property
    def passed(self) -> bool:
        """Checks if the store agrees with the journal in every byte."""
        return not self.differences

    def summary(self) -> str:
        """Returns the printed report."""
        head = (
            f"journal rows: {self.journal_rows}\n"
            f"games: {self.games}\n"
            f"verdicts: {self.verdicts_stored} stored, {self.verdicts_derived} re-derived\n"
            f"dead letters: {self.dead_letters_stored} stored, "
            f"{self.dead_letters_derived} re-derived\n"
            f"quarantined records (internal_error): {self.quarantined}\n"
            f"games by rules revision: {_counts(self.rules_revisions, 'revision ')}\n"
            f"games by the referee that started them: {_counts(self.started_by, '')}\n"
        )
        if self.archived_rows is not None:
            head += f"journal rows read from the archive: {self.archived_rows}\n"
        shown = "\n".join(f"  - {d}" for d in self.differences[:20])
        more = len(self.differences) - 20
        tail = f"\n  ... and {more} more" if more > 0 else ""
        if self.candidate is not None:
            head += f"candidate rules revision: {self.candidate} (every game judged under it)\n"
            if self.passed:
                return head + (
                    f"revision {self.candidate} changes nothing: every stored verdict, dead "
                    "letter and state is re-derived byte for byte"
                )
            return head + (
                f"revision {self.candidate} would change the verdicts of "
                f"{len(self.changed_games)} game(s) ({len(self.differences)} difference(s), "
                f"the first of each game):\n{shown}{tail}"
            )
        if self.passed:
            return head + "audit passed: every stored verdict is re-derived byte for byte"
        return head + f"audit FAILED: {len(self.differences)} difference(s)\n{shown}{tail}"


def _counts(counts: dict[str, int], prefix: str) -> str:
    return ", ".join(f"{prefix}{k}: {n}" for k, n in sorted(counts.items())) or "none"


UNRECORDED_REVISION = 1
"""The rules revision of a game that has no row in ``game_revisions``: it started before
migration 0009, judged by release 0.1.0 (revision 1)."""

UNRECORDED = "before 0.2.0"
"""What started a game that has no row in ``game_revisions`` (migration 0009)."""


def source_of(topic: str, partition: int, offset: int) -> Source:
    """Returns the source a journal row was received from."""
    if topic.startswith(FILE_PREFIX):
        return FileSource(topic.removeprefix(FILE_PREFIX), offset)
    return KafkaSource(topic, partition, offset)


async def audit(
    views: StoreViews, max_event_bytes: int, candidate: int | None = None
) -> AuditReport:
    """Replays the journal through a fresh referee and compares everything stored.

    Each record is judged under the size limit it was judged under (recorded in the
    journal; ``max_event_bytes`` for rows older than that record). A record the referee
    failed on (``internal_error``) is not judged again: it took no place, and its dead letter
    is compared with the one its stored failure detail gives.

    With a ``candidate`` revision, every game is judged under it instead (a differential
    audit: what a release that judged these games by that revision would have published);
    each game whose verdicts would change is named with its first differing verdict.
    """
    report = AuditReport(candidate=candidate)
    pinned = await views.game_revisions()
    # A game without a row started before rules revisions were recorded: revision 1. An
    # unknown revision (a newer release's) raises UnknownRevisionError here, before any
    # record is judged: never judged again under another rulebook.
    referee = Referee(max_event_bytes)
    if candidate is None:
        referee.pin({g: number for g, (number, _) in pinned.items()}, UNRECORDED_REVISION)
    else:
        referee.pin({}, candidate)
    derived: dict[str, list[str]] = defaultdict(list)
    derived_dead: dict[int, str] = {}
    stored_dead = await views.dead_letter_bodies()
    async for row in views.journal():
        report.journal_rows += 1
        source = source_of(row.source_topic, row.source_partition, row.source_offset)
        if row.reason == RejectionReason.INTERNAL_ERROR:
            report.quarantined += 1
            detail = _stored_detail(stored_dead.get(row.id))
            if detail is None:
                report.differences.append(
                    f"journal row {row.id} was quarantined but has no dead letter"
                )
                continue
            result = referee.quarantine(bytes(row.raw), source, detail, log_error=False)
        else:
            limit = row.max_event_bytes
            referee.max_event_bytes = max_event_bytes if limit is None else int(limit)
            result = referee.process(bytes(row.raw), source)
        if result.outcome.value != row.outcome:
            report.differences.append(
                f"journal row {row.id}: stored outcome {row.outcome}, "
                f"re-derived {result.outcome.value}"
            )
        for v in result.verdicts:
            derived[v.game_id].append(encode_canonical(v).decode())
        if result.rejection is not None:
            derived_dead[row.id] = encode_canonical(result.rejection).decode()
    stored: dict[str, list[str]] = defaultdict(list)
    for game_id, body in await views.verdict_bodies():
        stored[game_id].append(body)
    states = await views.current_states()
    report.verdicts_stored = sum(len(v) for v in stored.values())
    report.verdicts_derived = sum(len(v) for v in derived.values())
    report.dead_letters_stored = len(stored_dead)
    report.dead_letters_derived = len(derived_dead)
    report.games = len(referee.games)
    for game_id, ledger in referee.games.items():
        number = str(ledger.rules_revision)
        report.rules_revisions[number] = report.rules_revisions.get(number, 0) + 1
        started = pinned[game_id][1] if game_id in pinned else UNRECORDED
        report.started_by[started] = report.started_by.get(started, 0) + 1
    for game_id in sorted(set(pinned) - set(referee.games)):
        report.differences.append(
            f"game {game_id!r} has a rules revision recorded but no GameStarted in the journal"
        )
    _compare_verdicts(stored, derived, report)
    word = "re-derived" if candidate is None else f"revision {candidate} gives"
    report.differences = [d.replace("re-derived", word) for d in report.differences]
    for journal_id in sorted(set(stored_dead) | set(derived_dead)):
        if stored_dead.get(journal_id) != derived_dead.get(journal_id):
            report.differences.append(f"dead letter of journal row {journal_id} differs")
    for game_id, ledger in referee.games.items():
        kept = states.get(game_id)
        if kept is None or encode_state(decode_state(kept)) != encode_state(ledger.state):
            report.differences.append(f"projection of game {game_id!r} differs from the journal")
    return report


def _stored_detail(body: str | None) -> str | None:
    """Returns the failure detail of a stored dead letter, if it is one."""
    if body is None:
        return None
    try:
        rejection = msgspec.json.decode(body, type=EventRejected)
    except msgspec.DecodeError:
        return None
    return rejection.detail


def _compare_verdicts(
    stored: dict[str, list[str]], derived: dict[str, list[str]], report: AuditReport
) -> None:
    for game_id in sorted(set(stored) | set(derived)):
        have, want = stored.get(game_id, []), derived.get(game_id, [])
        if have == want:
            continue
        for i in range(max(len(have), len(want))):
            a = have[i] if i < len(have) else None
            b = want[i] if i < len(want) else None
            if a != b:
                report.changed_games.append(game_id)
                report.differences.append(
                    f"game {game_id!r}, verdict #{i + 1}: stored {a or 'nothing'}, "
                    f"re-derived {b or 'nothing'}"
                )
                break
