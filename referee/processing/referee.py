"""The referee of many games: sequencing, deduplication and the judge, over raw records.

This is the in-memory heart shared by ``referee replay`` and the store's processing step: the
same records in the same order give the same outcomes, verdicts and rejections everywhere.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path

from referee.contracts.parse import DEFAULT_MAX_EVENT_BYTES, Unparsed, parse_event, read_envelope
from referee.contracts.rejection import Source, rejection_of
from referee.contracts.verdicts import to_wire
from referee.contracts.wire import INPUT_EVENTS, GameStartedWire, InputEvent
from referee.domain.errors import InvalidInput, RejectionReason
from referee.domain.revisions import NEWEST, judge_of, revision
from referee.domain.verdicts import FoulRecorded, Verdict
from referee.processing.ledger import (
    Fingerprint,
    GameLedger,
    RawRecord,
    Taken,
    event_print,
    fingerprint,
    same_content,
)
from referee.processing.outcome import Outcome, Processed, Tally

log = logging.getLogger("referee.quarantine")

MAX_DETAIL = 1000
"""The longest ``detail`` of a quarantined record (an exception can say a lot)."""


# from the package's own file: ``__file__`` of a compiled module imported by another one of
# its build is wrong (docs/design.md, "The compiled build")
# (the package is imported before any of its modules)
_PACKAGE_ROOT = str(Path(str(sys.modules["referee"].__file__)).resolve().parents[1]) + os.sep


def failure_detail(exc: BaseException) -> str:
    """Returns what a quarantined record's ``detail`` says of the failure: the exception and
    where it was raised (a path from the project's root, the same on every machine)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:
        last = frames[-1]
        path = last.filename.removeprefix(_PACKAGE_ROOT).replace(os.sep, "/")
        where = f" (at {path}:{last.lineno} in {last.name})"
    detail = f"the referee failed on this record: {type(exc).__name__}: {exc}{where}"
    return detail if len(detail) <= MAX_DETAIL else detail[: MAX_DETAIL - 3] + "..."


_APPLIED = Outcome.APPLIED
_KIND = {cls: cls.__name__.removesuffix("Wire") for cls in INPUT_EVENTS}


class Referee:
    """Judges raw input records for any number of games, in arrival order."""

    def __init__(
        self,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        *,
        eager_prints: bool = False,
        rules_revision: int = NEWEST,
        pinned: Mapping[str, int] | None = None,
    ) -> None:
        revision(rules_revision)  # UnknownRevisionError before anything is judged
        for number in set((pinned or {}).values()):
            revision(number)
        self.max_event_bytes = max_event_bytes
        self.rules_revision = rules_revision
        """The rules revision a game that starts here is pinned to (docs/rules.md)."""
        self.pinned: Mapping[str, int] = pinned or {}
        """Games whose revision is known already (an audit's, from the store): a game named
        here is pinned to its revision when its ``GameStarted`` is judged again."""
        self.games: dict[str, GameLedger] = {}
        self.tally = Tally()
        self.eager_prints = eager_prints
        """Whether a valid event that takes a place is fingerprinted as it is judged, its
        fingerprint kept in its ledger and its outcome (the store's step: the journal needs
        every record's fingerprint, and a long-lived cache then holds 16 bytes a place);
        else its raw bytes are kept, fingerprinted only if a comparison needs them (the
        in-memory replay). Either way the outcomes are the same."""

    def pin(self, pinned: Mapping[str, int], unrecorded: int) -> None:
        """Judges the games named in ``pinned`` under their revisions, and any other game
        that starts here under ``unrecorded`` (a store's games: those without a recorded
        revision started under revision 1). Raises ``UnknownRevisionError`` for a revision
        this referee lacks, before anything is judged."""
        for number in {unrecorded, *pinned.values()}:
            revision(number)
        self.pinned = pinned
        self.rules_revision = unrecorded

    def parse(self, raw: bytes) -> InputEvent | Unparsed:
        """Validates one raw record at the edge (no state involved)."""
        return parse_event(raw, self.max_event_bytes)

    def process(self, raw: bytes, source: Source) -> Processed:
        """Judges one raw record and remembers its effect."""
        return self.apply(raw, source, parse_event(raw, self.max_event_bytes))

    def apply(self, raw: bytes, source: Source, parsed: InputEvent | Unparsed) -> Processed:
        """Judges one record already parsed by ``parse`` and remembers its effect.

        A record the referee itself fails on is quarantined (``internal_error``): it takes no
        place and changes no game, and the next record is judged as if it had not come. The
        ledgers are changed only once a record's outcome is complete, so a failure part way
        leaves them as they were.
        """
        record: RawRecord = raw  # type: ignore[assignment]  # RawRecord(raw) would be a call
        try:
            if isinstance(parsed, Unparsed):
                result = self._unparsed(record, source, parsed)
            else:
                result = self._judge(record, source, parsed)
        except Exception as exc:  # noqa: BLE001 - any failure here is a defect of the referee
            return self.quarantine(raw, source, failure_detail(exc))
        self.tally.count(result)
        return result

    def quarantine(
        self, raw: bytes, source: Source, detail: str, *, log_error: bool = True
    ) -> Processed:
        """Records that the referee failed on a record: rejected as ``internal_error``.

        The record takes no place in its game (its game's later events are ``seq_gap`` until
        it is sent again) and every other record goes on. It is logged at ERROR (an audit
        that meets it again says ``log_error=False``).
        """
        game_id, seq, event_id = read_envelope(raw)
        if log_error:
            log.error(
                "record quarantined (internal_error): %s",
                detail,
                extra={"source": str(source), "game_id": game_id, "seq": seq, "event_id": event_id},
            )
        rejection = rejection_of(
            raw, source, RejectionReason.INTERNAL_ERROR, detail, game_id, seq, event_id
        )
        result = Processed(
            Outcome.REJECTED,
            game_id,
            seq,
            event_id,
            None,
            fingerprint(raw),
            took_place=False,
            rejection=rejection,
        )
        self.tally.count(result)
        return result

    # --- records that failed at the edge ------------------------------------------------------

    def _unparsed(self, raw: RawRecord, source: Source, bad: Unparsed) -> Processed:
        fp = fingerprint(raw)
        game_id, seq = bad.game_id, bad.seq
        ledger = self.games.get(game_id) if game_id is not None else None
        took_place = False
        if ledger is not None and seq is not None and game_id is not None:
            if seq <= ledger.last_seq and same_content(ledger.by_seq.get(seq), fp):
                return Processed(
                    Outcome.DUPLICATE, game_id, seq, bad.event_id, None, fp, took_place=False
                )
            took_place = seq == ledger.last_seq + 1
        rejection = rejection_of(raw, source, bad.reason, bad.detail, game_id, seq, bad.event_id)
        result = Processed(
            Outcome.REJECTED, game_id, seq, bad.event_id, None, fp, took_place, (), rejection
        )
        if took_place and ledger is not None and seq is not None:
            ledger.take(seq, bad.event_id, fp)
        return result

    # --- valid events ---------------------------------------------------------------------------

    def _judge(self, raw: RawRecord, source: Source, event: InputEvent) -> Processed:
        game_id, seq, event_id = event.game_id, event.seq, event.event_id
        ledger = self.games.get(game_id)
        if ledger is None or seq != ledger.last_seq + 1 or event_id in ledger.by_event_id:
            return self._judge_unusual(raw, source, event, ledger)
        # The common case, kept short: the next event of a known game, with a fresh event id.
        try:
            state, verdicts = ledger.judge(ledger.state, event.to_domain())
        except InvalidInput as exc:
            return self._refused_in_place(raw, source, event, exc, ledger)
        content: InputEvent | Fingerprint = event
        taken: Taken = raw
        if self.eager_prints:
            content = taken = event_print(event)
        if verdicts:
            result = self._verdicts(event, verdicts, content)
        else:
            result = Processed(_APPLIED, game_id, seq, event_id, _KIND[type(event)], content, True)  # noqa: FBT003
        ledger.state = state
        ledger.last_seq = seq  # ledger.take, inlined: the event id is known to be fresh
        ledger.by_seq[seq] = taken
        ledger.by_event_id[event_id] = taken
        return result

    def _judge_unusual(
        self, raw: RawRecord, source: Source, event: InputEvent, ledger: GameLedger | None
    ) -> Processed:
        """Every case but the next event of a known game with a fresh event id."""
        game_id, seq, event_id = event.game_id, event.seq, event.event_id
        expected = 1 if ledger is None else ledger.last_seq + 1
        known = taken = None
        if ledger is not None:
            known, taken = ledger.by_event_id.get(event_id), ledger.by_seq.get(seq)
        if known is not None or taken is not None:
            fp = event_print(event)
            if same_content(known, fp) or same_content(taken, fp):
                kind = _KIND[type(event)]
                return Processed(
                    Outcome.DUPLICATE, game_id, seq, event_id, kind, event, took_place=False
                )
        problem = self._misplaced(event, ledger, expected)
        if problem is not None:
            reason, detail = problem
            return self._reject(raw, source, event, reason, detail, took_place=False)
        if known is not None and ledger is not None:  # (a known event id: a known game)
            kept, content = self._kept(raw, event)
            ledger.take(seq, None, kept)  # the place is taken; the event id stays its first's
            return self._reject(
                raw,
                source,
                event,
                RejectionReason.SEQ_CONFLICT,
                f"event_id {event_id!r} was already used by a different event",
                took_place=True,
                content=content,
            )
        if ledger is None:  # a GameStarted: the game is pinned to its revision here
            number = self.pinned.get(game_id, self.rules_revision)
            judge = judge_of(number)
        else:
            judge = ledger.judge
        try:
            state, verdicts = judge(None if ledger is None else ledger.state, event.to_domain())
        except InvalidInput as exc:
            if ledger is None:
                return self._reject(raw, source, event, exc.reason, exc.detail, took_place=False)
            return self._refused_in_place(raw, source, event, exc, ledger)
        kept, content = self._kept(raw, event)
        if verdicts:
            result = self._verdicts(event, verdicts, content)
        else:
            kind = _KIND[type(event)]
            result = Processed(
                Outcome.APPLIED, game_id, seq, event_id, kind, content, took_place=True
            )
        if ledger is None:
            ledger = self.games[game_id] = GameLedger(state, 0, rules_revision=number, judge=judge)
        else:
            ledger.state = state
        ledger.take(seq, event_id, kept)
        return result

    def _kept(self, raw: RawRecord, event: InputEvent) -> tuple[Taken, InputEvent | Fingerprint]:
        """What a ledger keeps of a valid event that takes a place, and its outcome's content:
        its fingerprint for both when prints are eager, else its raw bytes and the event."""
        if self.eager_prints:
            fp = event_print(event)
            return fp, fp
        return raw, event

    def _refused_in_place(
        self,
        raw: RawRecord,
        source: Source,
        event: InputEvent,
        refused: InvalidInput,
        ledger: GameLedger,
    ) -> Processed:
        """Rejects a valid event the judge refused at the next place of its game: it takes
        the place, and the game's state stays as it was."""
        kept, content = self._kept(raw, event)
        ledger.take(event.seq, event.event_id, kept)
        return self._reject(
            raw, source, event, refused.reason, refused.detail, took_place=True, content=content
        )

    @staticmethod
    def _verdicts(
        event: InputEvent, verdicts: tuple[Verdict, ...], content: InputEvent | Fingerprint
    ) -> Processed:
        game_id, seq, event_id = event.game_id, event.seq, event.event_id
        round_number = event.round_number
        wired = tuple(
            to_wire(
                v,
                game_id=game_id,
                round_number=round_number,
                cause_event_id=event_id,
                cause_seq=seq,
                occurred_at=event.occurred_at,
                index=i,
            )
            for i, v in enumerate(verdicts)
        )
        fouled = any(isinstance(v, FoulRecorded) for v in verdicts)
        return Processed(
            Outcome.FOULED if fouled else Outcome.APPLIED,
            game_id,
            seq,
            event_id,
            _KIND[type(event)],
            content,
            took_place=True,
            verdicts=wired,
        )

    @staticmethod
    def _misplaced(
        event: InputEvent, ledger: GameLedger | None, expected: int
    ) -> tuple[RejectionReason, str] | None:
        """Returns why an event cannot take its seq in its game, if it cannot."""
        game_id, seq = event.game_id, event.seq
        if ledger is None:
            if not isinstance(event, GameStartedWire):
                return (
                    RejectionReason.UNKNOWN_GAME,
                    f"{_KIND[type(event)]} for game {game_id!r}, which has not started",
                )
            if seq != 1:
                return RejectionReason.SEQ_GAP, f"GameStarted must have seq 1, got {seq}"
            return None
        if seq < expected:
            return (
                RejectionReason.SEQ_CONFLICT,
                f"seq {seq} of game {game_id!r} was already taken by a different event",
            )
        if seq > expected:
            return (
                RejectionReason.SEQ_GAP,
                f"seq {seq} of game {game_id!r} skips ahead; the next expected seq is {expected}",
            )
        return None

    def _reject(
        self,
        raw: bytes,
        source: Source,
        event: InputEvent,
        reason: RejectionReason,
        detail: str,
        *,
        took_place: bool,
        content: InputEvent | Fingerprint | None = None,
    ) -> Processed:
        """Rejects a valid event; ``content`` is its fingerprint when it took a place under
        eager prints (else the event)."""
        rejection = rejection_of(
            raw, source, reason, detail, event.game_id, event.seq, event.event_id
        )
        return Processed(
            Outcome.REJECTED,
            event.game_id,
            event.seq,
            event.event_id,
            _KIND[type(event)],
            event if content is None else content,
            took_place,
            (),
            rejection,
        )
