"""The rows one judged batch appends: journal, game versions, outboxes, positions."""

from __future__ import annotations

import asyncio
import time
from functools import cache

from referee.contracts.state_codec import encode_state
from referee.contracts.verdicts import encode_canonical
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

YIELD_AFTER = 0.001
"""Seconds of decoding, judging or row building between two yields to the event loop, so the
write in flight, the consumer's fetches and heartbeats and the probes go on while a batch is
judged, however long its records take (bench/notes.md has the trace that chose it)."""

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
    """Builds the rows of judged records, numbered by the ids and positions given (one each).

    The rows are built by their typed constructors, so mypy holds each field to its column;
    the outcome's text comes from a table (an enum's ``.value`` is a descriptor).
    """
    rows = StepRows()
    clock = time.perf_counter
    slice_end = clock() + YIELD_AFTER
    last_of_game: dict[str, int] = {}
    last_of_partition: dict[Partition, tuple[int, int]] = {}
    journal = rows.journal.append
    next_verdict = iter(verdict_positions).__next__
    next_dead = iter(dead_letter_positions).__next__
    writer = referee_version()
    for journal_id, (record, p) in zip(journal_ids, processed, strict=True):
        rejection = p.rejection
        content = p.content
        game_id = p.game_id
        took_place = p.took_place
        if isinstance(content, Fingerprint):  # fingerprinted as it was judged
            fp = content  # (where it took a place, its ledger holds that already)
        else:
            fp = event_print(content)
            if took_place and game_id is not None and p.seq is not None:
                games[game_id].settle(p.seq, p.event_id, record.raw, fp)
        journal(
            JournalRow(
                journal_id,
                record.topic,
                record.partition,
                record.offset,
                game_id,
                p.seq,
                p.event_id,
                p.event_type,
                _OUTCOME_TEXT[p.outcome],
                None if rejection is None else rejection.reason.value,
                took_place,
                fp,
                record.raw,
                max_event_bytes,
                writer,
            )
        )
        if took_place and game_id is not None and p.seq is not None:
            last_of_game[game_id] = journal_id
            if p.seq == 1 and p.outcome is _APPLIED and p.event_type == "GameStarted":
                ledger = games[game_id]  # the game started here: its pinned revision
                rows.revisions.append(
                    GameRevisionRow(game_id, ledger.rules_revision, writer, journal_id)
                )
        for v in p.verdicts:
            rows.verdicts.append(
                VerdictRow(
                    next_verdict(),
                    v.verdict_id,
                    v.game_id,
                    v.__struct_config__.tag,  # type: ignore[arg-type]
                    v.cause_seq,
                    journal_id,
                    encode_canonical(v).decode(),
                    record.topic,
                    record.partition,
                )
            )
        if rejection is not None:
            rows.dead_letters.append(
                DeadLetterRow(
                    next_dead(),
                    journal_id,
                    record.key if record.key is not None else _key_of(game_id),
                    rejection.reason.value,
                    encode_canonical(rejection).decode(),
                    record.topic,
                    record.partition,
                )
            )
        last_of_partition[record.topic, record.partition] = (record.offset, journal_id)
        if clock() > slice_end:
            await asyncio.sleep(0)
            slice_end = clock() + YIELD_AFTER
    for game_id, journal_id in last_of_game.items():
        ledger = games[game_id]
        rows.versions.append(
            GameVersionRow(
                game_id, ledger.last_seq, encode_state(ledger.state).decode(), journal_id
            )
        )
    for (topic, partition), (offset, journal_id) in last_of_partition.items():
        rows.positions.append(PositionRow(group_id, topic, partition, offset, journal_id))
    return rows


def _key_of(game_id: str | None) -> bytes | None:
    return None if game_id is None else game_id.encode()
