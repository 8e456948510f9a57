"""``referee audit``, a use case: every verdict re-derived from the journal, compared byte for
byte (the store's reads in ``store/views.py``, the judging by a fresh ``Referee``)."""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field

import msgspec

from referee.contracts.rejection import EventRejected, FileSource, KafkaSource, Source
from referee.contracts.state_codec import decode_state, encode_state
from referee.contracts.verdicts import encode_canonical
from referee.domain.errors import RejectionReason
from referee.processing.appends import referee_version
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
    written_by: dict[str, int] = field(default_factory=dict)
    """Journal rows by the referee version that wrote them (``UNRECORDED_WRITER``: before
    migration 0011, or an earlier release running beside a later one)."""
    differences_by_writer: dict[str, int] = field(default_factory=dict)
    """Differences by the referee version that wrote the row found different."""
    auditor: str = ""
    """The version of the referee that audits (this one)."""
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
            f"journal rows by the referee that wrote them: {_counts(self.written_by, '')}\n"
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
        return (
            head
            + f"audit FAILED: {len(self.differences)} difference(s)\n{shown}{tail}\n"
            + "\n".join(self.readings())
        )

    def readings(self) -> list[str]:
        """What the differences are, by the release that wrote the rows found different."""
        lines = []
        for writer, count in sorted(self.differences_by_writer.items()):
            if writer == self.auditor:
                what = (
                    "this release wrote them and now derives otherwise: the rows were altered "
                    "after they were written (or the judge is not deterministic: a defect)"
                )
            elif writer == UNRECORDED_WRITER:
                what = (
                    "their writer is not recorded (written before migration 0011): an earlier "
                    "release that judged their games' revision otherwise, or altered rows"
                )
            else:
                what = (
                    f"release {writer} wrote them under the same rules revision: its judge of "
                    "that revision differs from this release's (a rules change shipped without "
                    "a new revision: a release defect), or the rows were altered"
                )
            lines.append(f"{count} difference(s) in rows written by {writer}: {what}")
        return lines


def _counts(counts: dict[str, int], prefix: str) -> str:
    return ", ".join(f"{prefix}{k}: {n}" for k, n in sorted(counts.items())) or "none"


UNRECORDED_REVISION = 1
"""The rules revision of a game that has no row in ``game_revisions``: it started before
migration 0009, judged by release 0.1.0 (revision 1)."""

UNRECORDED = "before 0.2.0"
"""What started a game that has no row in ``game_revisions`` (migration 0009)."""

UNRECORDED_WRITER = "not recorded"
"""The writer of a journal row written before migration 0011 (release 0.4.0), or by an
earlier release beside a later one during a rolling upgrade."""


@dataclass(slots=True)
class Writers:
    """The release that wrote each journal row, kept as runs of rows in id order (one entry
    where the writer changes, not one per row: a store of millions of rows has a few runs)."""

    starts: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)

    def add(self, journal_id: int, writer: str | None) -> str:
        """Records the writer of the next row in id order; returns its name."""
        name = UNRECORDED_WRITER if writer is None else writer
        if not self.names or self.names[-1] != name:
            self.starts.append(journal_id)
            self.names.append(name)
        return name

    def of(self, journal_id: int) -> str:
        """The writer of journal row ``journal_id``."""
        at = bisect_right(self.starts, journal_id) - 1
        return self.names[at] if at >= 0 else UNRECORDED_WRITER


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
    report = AuditReport(candidate=candidate, auditor=referee_version())
    writers = Writers()
    pinned = await views.game_revisions()
    # A game without a row started before rules revisions were recorded: revision 1. An
    # unknown revision (a newer release's) raises UnknownRevisionError here, before any
    # record is judged: never judged again under another rulebook.
    referee = Referee(max_event_bytes)
    if candidate is None:
        referee.pin({g: number for g, (number, _) in pinned.items()}, UNRECORDED_REVISION)
    else:
        referee.pin({}, candidate)
    derived: dict[str, list[tuple[str, int]]] = defaultdict(list)
    derived_dead: dict[int, str] = {}
    stored_dead = await views.dead_letter_bodies()
    async for row in views.journal():
        report.journal_rows += 1
        writer = writers.add(row.id, row.referee_version)
        report.written_by[writer] = report.written_by.get(writer, 0) + 1
        source = source_of(row.source_topic, row.source_partition, row.source_offset)
        if row.reason == RejectionReason.INTERNAL_ERROR:
            report.quarantined += 1
            detail = _stored_detail(stored_dead.get(row.id))
            if detail is None:
                _differ(
                    report,
                    writer,
                    f"journal row {row.id} (written by {writer}) was quarantined but has no "
                    "dead letter",
                )
                continue
            result = referee.quarantine(bytes(row.raw), source, detail, log_error=False)
        else:
            limit = row.max_event_bytes
            referee.max_event_bytes = max_event_bytes if limit is None else int(limit)
            result = referee.process(bytes(row.raw), source)
        if result.outcome.value != row.outcome:
            now = result.rejection.reason.value if result.rejection is not None else None
            _differ(
                report,
                writer,
                f"journal row {row.id} (written by {writer}"
                f"{_revision_of(referee, result.game_id)}): stored outcome "
                f"{_outcome(row.outcome, row.reason)}, re-derived "
                f"{_outcome(result.outcome.value, now)}",
            )
        for v in result.verdicts:
            derived[v.game_id].append((encode_canonical(v).decode(), row.id))
        if result.rejection is not None:
            derived_dead[row.id] = encode_canonical(result.rejection).decode()
    stored: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for game_id, body, journal_id in await views.verdict_bodies():
        stored[game_id].append((body, journal_id))
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
    _compare_verdicts(stored, derived, report, referee, writers)
    word = "re-derived" if candidate is None else f"revision {candidate} gives"
    report.differences = [d.replace("re-derived", word) for d in report.differences]
    for journal_id in sorted(set(stored_dead) | set(derived_dead)):
        if stored_dead.get(journal_id) != derived_dead.get(journal_id):
            writer = writers.of(journal_id)
            _differ(
                report,
                writer,
                f"dead letter of journal row {journal_id} (written by {writer}) differs: "
                f"{_kind(stored_dead.get(journal_id), derived_dead.get(journal_id), word)}",
            )
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
    stored: dict[str, list[tuple[str, int]]],
    derived: dict[str, list[tuple[str, int]]],
    report: AuditReport,
    referee: Referee,
    writers: Writers,
) -> None:
    """Names each game's first differing verdict: its place, what differs, the journal row
    it stands on and the release that wrote that row."""
    for game_id in sorted(set(stored) | set(derived)):
        have, want = stored.get(game_id, []), derived.get(game_id, [])
        if [b for b, _ in have] == [b for b, _ in want]:
            continue
        for i in range(max(len(have), len(want))):
            a = have[i] if i < len(have) else None
            b = want[i] if i < len(want) else None
            if a is None or b is None or a[0] != b[0]:
                journal_id = (a or b or ("", 0))[1]
                writer = writers.of(journal_id)
                report.changed_games.append(game_id)
                _differ(
                    report,
                    writer,
                    f"game {game_id!r}{_revision_of(referee, game_id, ' (')}, verdict #{i + 1} "
                    f"(journal row {journal_id}, written by {writer}): "
                    f"{_kind(a and a[0], b and b[0], 're-derived')}: stored "
                    f"{a[0] if a else 'nothing'}, re-derived {b[0] if b else 'nothing'}",
                )
                break


def _differ(report: AuditReport, writer: str, line: str) -> None:
    report.differences.append(line)
    report.differences_by_writer[writer] = report.differences_by_writer.get(writer, 0) + 1


def _revision_of(referee: Referee, game_id: str | None, lead: str = "; ") -> str:
    """``; game 'g' under rules revision N`` (or `` (rules revision N)``) if it is known."""
    ledger = referee.games.get(game_id) if game_id is not None else None
    if ledger is None:
        return ""
    if lead == "; ":
        return f"; game {game_id!r} under rules revision {ledger.rules_revision}"
    return f" (rules revision {ledger.rules_revision})"


def _outcome(outcome: str, reason: str | None) -> str:
    return outcome if reason is None else f"{outcome} ({reason})"


def _kind(stored: str | None, derived: str | None, word: str) -> str:
    """What a difference of two canonical JSON bodies is: one missing, or the fields that
    differ."""
    if stored is None:
        return f"missing from the store, {word} only"
    if derived is None:
        return f"stored, not {word}"
    try:
        a, b = msgspec.json.decode(stored), msgspec.json.decode(derived)
    except msgspec.DecodeError:
        return "the stored body is not JSON"
    if not isinstance(a, dict) or not isinstance(b, dict):
        return "bodies differ"
    fields = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    return f"{', '.join(fields) or 'key order'} differ{'s' if len(fields) == 1 else ''}"
