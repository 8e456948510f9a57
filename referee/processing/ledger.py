"""What a game's ledger remembers: its state, and what took each place in its sequence.

Two kinds of bytes travel here, and their types keep them apart: a ``RawRecord`` is an input
record exactly as received; a ``Fingerprint`` is the 16-byte digest of a record's content.
A place in a game is kept as either (``Taken``): the raw bytes of the valid event that took
it (they exist already; its fingerprint is derived only when a comparison needs it), or a
fingerprint (for unparsed records, for places loaded from the store, and for every event the
store's step judges: it fingerprints each as it judges it, ``Referee.eager_prints``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import NewType

import msgspec

from referee.contracts.wire import InputEvent
from referee.domain.revisions import Judge, judge_of
from referee.domain.state import GameState

REVISION_1: Judge = judge_of(1)
"""The judge of rules revision 1, every game's before migration 0009."""

RawRecord = NewType("RawRecord", bytes)
"""An input record exactly as received (a Kafka value, or a log line without its break)."""


class Fingerprint(bytes):
    """The 16-byte content fingerprint of a record, used to tell duplicates from conflicts."""

    __slots__ = ()


Taken = Fingerprint | RawRecord
"""What took a place in a game: its record's fingerprint, or the raw valid record itself."""


def fingerprint(data: bytes) -> Fingerprint:
    """Returns the fingerprint of bytes (a record that failed at the edge: its raw bytes)."""
    return Fingerprint(hashlib.blake2b(data, digest_size=16).digest())


_ENCODE = msgspec.json.Encoder().encode
_DECODE_VALID = msgspec.json.Decoder(InputEvent).decode


def event_print(event: InputEvent) -> Fingerprint:
    """Returns a valid event's fingerprint: that of its canonical encoding.

    The same content written differently (spacing, key order) has the same fingerprint.
    """
    return fingerprint(_ENCODE(event))


def print_of(taken: Taken) -> Fingerprint:
    """Returns the fingerprint of what took a place."""
    if isinstance(taken, Fingerprint):
        return taken
    return event_print(_DECODE_VALID(taken))


def same_content(taken: Taken | None, fp: Fingerprint) -> bool:
    """Checks if what took a place (if anything did) has the fingerprint ``fp``."""
    return taken is not None and print_of(taken) == fp


@dataclass(slots=True)
class GameLedger:
    """A game's folded state, the last seq that took its place, and what took each place.

    Event ids are idempotency keys within a game: a game lives in one partition, so this is
    exactly what any one instance can check, live or in a replay.
    """

    state: GameState
    last_seq: int
    by_seq: dict[int, Taken] = field(default_factory=dict)
    """What took each seq (all of them, or those loaded when not ``complete``)."""
    by_event_id: dict[str, Taken] = field(default_factory=dict)
    """What took a place under each event id."""
    complete: bool = True
    """Whether the game's whole history is in memory (else: ask the store)."""
    rules_revision: int = 1
    """The rules revision the game is judged under, from its ``GameStarted`` to its end."""
    judge: Judge = REVISION_1
    """That revision's judge (``referee.domain.revisions``)."""

    def take(self, seq: int, event_id: str | None, taken: Taken) -> None:
        """Records that ``taken`` (and ``event_id``, when readable) took place ``seq``."""
        self.last_seq = seq
        self.by_seq[seq] = taken
        if event_id is not None:
            self.by_event_id.setdefault(event_id, taken)

    def remember(self, seq: int, event_id: str | None, fp: Fingerprint) -> None:
        """Records what the store says took place ``seq`` (a game loaded half from it)."""
        self.by_seq[seq] = fp
        if event_id is not None:
            self.by_event_id.setdefault(event_id, fp)
