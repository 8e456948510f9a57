"""Every PostgreSQL advisory lock the referee takes, in one place.

Advisory locks share one 64-bit key space per database; keeping the keys together keeps them
apart. On the path from fetch to publish the referee takes only the lock of each input
partition a batch writes, which only that partition's owner takes.
"""

from __future__ import annotations

TAKEOVER_LOCK = 0x5245_5441_4B45  # "RETAKE"
"""Session lock held while an instance takes the publishing over from the global relay of
releases up to 0.1 (once per database, at start): instances starting together do it once."""


def position_lock_name(group_id: str, topic: str, partition: int) -> str:
    """Returns the text whose hash keys the transaction lock of one consumer position."""
    return f"{group_id}\x1f{topic}\x1f{partition}"
