"""The hot-game cache: the games a step judged lately, bounded, and known by partition.

A game lives in one input partition, and only that partition's owner writes it, so a cached
game is the stored one for as long as this instance keeps the partition. When the partition
may have been written by another instance (lost, or found moved on), its games are dropped
and read again from the store when next needed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from referee.processing.ledger import GameLedger
from referee.processing.records import Partition

_SEVERAL: None = None
"""The partition of a game seen in more than one (a producer that does not key by game id):
dropped whenever any partition is."""


class GameCache:
    """Least-recently-used game ledgers (the referee's own dict), at most ``bound`` of them
    once trimmed."""

    def __init__(self, games: dict[str, GameLedger], bound: int) -> None:
        self.games = games
        self.bound = bound
        self._recency: OrderedDict[str, None] = OrderedDict()
        self._partition_of: dict[str, Partition | None] = {}

    def place(self, touched: dict[str, Partition]) -> None:
        """Notes the partition each touched game came from."""
        partition_of = self._partition_of
        for game_id, partition in touched.items():
            known = partition_of.get(game_id, partition)
            partition_of[game_id] = partition if known == partition else _SEVERAL

    def trim(self, touched: Iterable[str], pinned: Iterable[str]) -> None:
        """Marks the games of a committed batch most recent (those it started included), then
        drops the least recent beyond the bound, never a game of the batch judged next
        (``pinned``): its write is not settled, so the store does not hold its state yet."""
        games = self.games
        recency = self._recency
        for g in touched:
            if g in games:
                recency[g] = None
                recency.move_to_end(g)
        keep = set(pinned)
        kept: list[str] = []
        while len(recency) > self.bound:
            oldest, _ = recency.popitem(last=False)
            if oldest in keep:
                kept.append(oldest)
            else:
                games.pop(oldest, None)
                self._partition_of.pop(oldest, None)
        for g in kept:
            recency[g] = None

    def evict(self, game_ids: Iterable[str]) -> None:
        """Drops these games (they are read from the store when next needed)."""
        for g in game_ids:
            self.games.pop(g, None)
            self._recency.pop(g, None)
            self._partition_of.pop(g, None)

    def evict_partitions(self, partitions: set[Partition]) -> None:
        """Drops every game of these partitions (and every game seen in several)."""
        if not partitions:
            return
        self.evict([g for g, p in self._partition_of.items() if p is _SEVERAL or p in partitions])
        # a game judged but never placed (a failed batch) belongs to no partition yet
        self.evict([g for g in self.games if g not in self._partition_of])
