"""Every PostgreSQL advisory lock the referee takes, in one place.

Advisory locks share one 64-bit key space per database; keeping the keys together keeps them
apart.
"""

from __future__ import annotations

OUTBOX_LOCK = 0x5245_4645_5245_45  # "REFEREE"
"""Transaction lock taken by every writer before it appends outbox rows: outbox positions are
then taken in commit order, so a relay reading them in order never passes over a row that
commits later."""

RELAY_LOCK = 0x5245_4C41_59  # "RELAY"
"""Session lock held by the one relay that publishes the outboxes."""


def position_lock_name(group_id: str, topic: str, partition: int) -> str:
    """Returns the text whose hash keys the transaction lock of one consumer position."""
    return f"{group_id}\x1f{topic}\x1f{partition}"


OUTBOX_CHANNEL = "referee_outbox"
"""The notification channel a writer of outbox rows notifies; the leading relay listens, so it
wakes at the commit it must publish, whichever instance committed."""
