"""The rows one judged batch appends: journal, game versions, outboxes, positions."""

from __future__ import annotations

from functools import cache

from referee.contracts.rejection import EventRejected
from referee.contracts.state_codec import encode_state
from referee.contracts.verdicts import OutputVerdict, encode_canonical
from referee.processing import slices
from referee.processing.ledger import Fingerprint, GameLedger, event_print
from referee.processing.outcome import Outcome, Processed
from referee.processing.records import InputRecord, Partition
from referee.processing.rows import (
    DeadLetterRow,
    GameRevisionRow,
    GameVersionRow,
    JournalRow,
    PositionRow,
    StepRows,
    VerdictRow,
)

_OUTCOME_TEXT = {o: o.value for o in Outcome}
_APPLIED = Outcome.APPLIED


@cache
def referee_version() -> str:
    """The installed referee's version, recorded with each journal row it writes and each
    game it starts (``unknown`` from a bare source tree). Looked up once, when the first rows
    are built: importlib.metadata costs start-up time every other command would pay."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("referee")
    except PackageNotFoundError:
        return "unknown"


def outbox_counts(processed: list[tuple[InputRecord, Processed]]) -> tuple[int, int]:
    """Returns how many verdicts and dead letters these records give."""
    verdicts = dead = 0
    for _, p in processed:
        verdicts += len(p.verdicts)
        if p.rejection is not None:
            dead += 1
    return verdicts, dead


async def build_rows(
    processed: list[tuple[InputRecord, Processed]],
    games: dict[str, GameLedger],
    group_id: str,
    max_event_bytes: int,
    journal_ids: list[int],
    verdict_positions: list[int],
    dead_letter_positions: list[int],
) -> StepRows:
    """Builds the rows of judged records, numbered by the ids and positions given (one each);
    reads the games' ledgers and changes none.

    The rows are built by their typed constructors, so mypy holds each field to its column.
    """
    rows = StepRows()
    last_of_game: dict[str, int] = {}
    last_of_partition: dict[Partition, tuple[int, int]] = {}
    journal = rows.journal.append
    verdicts = rows.verdicts.append
    dead_letters = rows.dead_letters.append
    next_verdict = iter(verdict_positions).__next__
    next_dead = iter(dead_letter_positions).__next__
    writer = referee_version()

    def add(numbered: tuple[int, tuple[InputRecord, Processed]]) -> None:
        journal_id, (record, p) = numbered
        journal(_journal_row(journal_id, record, p, max_event_bytes, writer))
        game_id = p.game_id
        if p.took_place and game_id is not None and p.seq is not None:
            last_of_game[game_id] = journal_id
            if p.seq == 1 and p.outcome is _APPLIED and p.event_type == "GameStarted":
                revision = games[game_id].rules_revision  # the game started here: its pin
                rows.revisions.append(GameRevisionRow(game_id, revision, writer, journal_id))
        for v in p.verdicts:
            verdicts(_verdict_row(next_verdict(), v, journal_id, record))
        if p.rejection is not None:
            dead_letters(_dead_letter_row(next_dead(), p.rejection, journal_id, record, game_id))
        last_of_partition[record.topic, record.partition] = (record.offset, journal_id)

    await slices.each(zip(journal_ids, processed, strict=True), add)
    rows.versions = [
        GameVersionRow(g, games[g].last_seq, encode_state(games[g].state).decode(), journal_id)
        for g, journal_id in last_of_game.items()
    ]
    rows.positions = [
        PositionRow(group_id, topic, partition, offset, journal_id)
        for (topic, partition), (offset, journal_id) in last_of_partition.items()
    ]
    return rows


def _journal_row(
    journal_id: int, record: InputRecord, p: Processed, max_event_bytes: int, writer: str
) -> JournalRow:
    content = p.content
    rejection = p.rejection
    return JournalRow(
        journal_id,
        record.topic,
        record.partition,
        record.offset,
        p.game_id,
        p.seq,
        p.event_id,
        p.event_type,
        _OUTCOME_TEXT[p.outcome],  # from a table: an enum's ``.value`` is a descriptor
        None if rejection is None else rejection.reason.value,
        p.took_place,
        content if isinstance(content, Fingerprint) else event_print(content),
        record.raw,
        max_event_bytes,
        writer,
    )


def _verdict_row(
    position: int, verdict: OutputVerdict, journal_id: int, record: InputRecord
) -> VerdictRow:
    return VerdictRow(
        position,
        verdict.verdict_id,
        verdict.game_id,
        verdict.__struct_config__.tag,  # type: ignore[arg-type]
        verdict.cause_seq,
        journal_id,
        encode_canonical(verdict).decode(),
        record.topic,
        record.partition,
    )


def _dead_letter_row(
    position: int,
    rejection: EventRejected,
    journal_id: int,
    record: InputRecord,
    game_id: str | None,
) -> DeadLetterRow:
    return DeadLetterRow(
        position,
        journal_id,
        record.key if record.key is not None else _key_of(game_id),
        rejection.reason.value,
        encode_canonical(rejection).decode(),
        record.topic,
        record.partition,
    )


def _key_of(game_id: str | None) -> bytes | None:
    return None if game_id is None else game_id.encode()
