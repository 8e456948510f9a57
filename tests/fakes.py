"""In-memory fakes of the referee's ports, for unit tests only (cosmicpython's FakeUnitOfWork).

They keep the semantics the code relies on: a transaction's rows are kept only when it
commits, a position lock is held until its transaction ends, a place in a game can be taken
once. The same behaviour is proven on the real PostgreSQL by the integration suites; these
fakes make the delicate parts testable in milliseconds.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from aiokafka import TopicPartition
from aiokafka.errors import MessageSizeTooLargeError, ProducerFenced, RecordTooLargeError

from referee.processing.rows import (
    DeadLetterRow,
    Fenced,
    GameRevisionRow,
    GameVersionRow,
    JournalRow,
    Moved,
    PositionRow,
    Reserved,
    StepRows,
    StoredGame,
    StoredPrint,
    Taken,
    Term,
    VerdictRow,
    Written,
)
from referee.service.tails import Input, Survey, Tail
from referee.store.outbox_store import OutboxRow


class FakeOutageError(ConnectionError):
    """The fake store being unreachable (an outage: retried, never quarantined)."""


class FakeRefusalError(ValueError):
    """The fake store refusing a row's value (a defect the step must isolate)."""


@dataclass
class FakeStepStore:
    """The processing step's store, in memory."""

    journal: list[JournalRow] = field(default_factory=list)
    versions: list[GameVersionRow] = field(default_factory=list)
    verdicts: list[VerdictRow] = field(default_factory=list)
    dead_letters: list[DeadLetterRow] = field(default_factory=list)
    positions: list[PositionRow] = field(default_factory=list)
    revisions: list[GameRevisionRow] = field(default_factory=list)
    commits: int = 0
    sequences: dict[str, int] = field(default_factory=dict)
    """The next number of each sequence (journal ids, verdict and dead-letter positions)."""
    checkpoints: list[tuple[str, str, int, int]] = field(default_factory=list)
    """(outbox, topic, partition, position) of every outbox checkpoint."""
    refuse: Callable[[StepRows], BaseException | None] | None = None
    """Called on every append: a failure it returns is raised (a fault of the test's choosing)."""
    before_load_games: Callable[[], Awaitable[None]] | None = None
    """Awaited inside ``load_games``: a test can run something concurrently there."""
    loaded_games: list[list[str]] = field(default_factory=list)
    reads_opened: int = 0
    """Connections opened for reads (``reads()``)."""
    reservations: list[int] = field(default_factory=list)
    """The count of every journal id reservation, in order."""
    commit_gate: asyncio.Event | None = None
    """When set, a transaction that wrote rows waits for it before it commits (a write
    left in flight for as long as a test likes)."""
    owners: list[tuple[str, str, int, int, int, str, str]] = field(default_factory=list)
    """(group, topic, partition, epoch, event (1 taken, 2 given back), owner, transactional id)
    of every term of ownership, in order."""
    withheld: list[tuple[str, str, int, int, str]] = field(default_factory=list)
    """(outbox, topic, partition, position, reason) of every row withheld."""
    gaps: list[tuple[str, str, int, int, int]] = field(default_factory=list)
    """(group, topic, partition, first missing, next offset) of every gap accepted."""
    _locks: dict[tuple[str, str, int], asyncio.Lock] = field(
        default_factory=lambda: defaultdict(asyncio.Lock)
    )

    async def load_positions(
        self, group_id: str, topic: str, partitions: Iterable[int]
    ) -> dict[int, int]:
        return self.positions_of(group_id, topic, partitions)

    async def write(self, group_id: str, fence: Sequence[Fenced], rows: StepRows) -> Written:
        """One fenced transaction: the positions' locks in order, the check of each term and
        position, the rows kept only if nothing raises (and, with ``commit_gate``, once the
        gate opens)."""
        held: list[asyncio.Lock] = []
        try:
            for f in sorted(fence, key=lambda f: (f.topic, f.partition)):
                lock = self._locks[group_id, f.topic, f.partition]
                await lock.acquire()
                held.append(lock)
                stored = self.position_of(group_id, f.topic, f.partition)
                if f.epoch is not None:
                    epoch, released = self.term_of(group_id, f.topic, f.partition)
                    if epoch != f.epoch or released:
                        return Written(Moved(f.topic, f.partition, stored, epoch, released), 0.0)
                if stored != f.expected:
                    return Written(Moved(f.topic, f.partition, stored, f.epoch or 0, False), 0.0)
            tx = FakeStepTransaction(self)
            await tx.append(rows)
            if self.commit_gate is not None:
                await self.commit_gate.wait()
            self._commit(tx.staged)
            return Written(None, 0.0)
        finally:
            for lock in held:
                lock.release()

    # the terms of ownership

    def term_of(self, group_id: str, topic: str, partition: int) -> tuple[int, bool]:
        """The partition's newest term and whether it was given back ((0, False): none)."""
        found = [(o[3], o[4]) for o in self.owners if o[:3] == (group_id, topic, partition)]
        if not found:
            return 0, False
        epoch, event = max(found)
        return epoch, event == 2

    async def take(
        self,
        group_id: str,
        topic: str,
        partitions: Sequence[int],
        owner: str,
        transactional_ids: Sequence[str],
    ) -> list[Taken]:
        taken = []
        for p, txn in sorted(zip(partitions, transactional_ids, strict=True)):
            async with self._locks[group_id, topic, p]:
                previous, released = self.term_of(group_id, topic, p)
                last = [o for o in self.owners if o[:4] == (group_id, topic, p, previous)]
                self.owners.append((group_id, topic, p, previous + 1, 1, owner, txn))
                taken.append(
                    Taken(
                        p,
                        previous + 1,
                        self.position_of(group_id, topic, p),
                        previous,
                        released,
                        last[0][5] if last else None,
                        last[0][6] if last else None,
                    )
                )
        return taken

    async def terms(self, group_id: str, topic: str, partitions: Sequence[int]) -> list[Term]:
        return [
            Term(p, *self.term_of(group_id, topic, p), self.position_of(group_id, topic, p))
            for p in sorted(partitions)
        ]

    async def give_back(
        self, group_id: str, topic: str, owner: str, terms: Sequence[tuple[int, int, str]]
    ) -> None:
        for p, epoch, txn in terms:
            self.owners.append((group_id, topic, p, epoch, 2, owner, txn))

    @asynccontextmanager
    async def reads(self) -> AsyncIterator[FakeStepTransaction]:
        self.reads_opened += 1
        tx = FakeStepTransaction(self)
        yield tx
        assert not tx.staged, "reads() appends nothing"

    def is_outage(self, exc: BaseException) -> bool:
        return isinstance(exc, FakeOutageError)

    def snapshot(self) -> Callable[[], None]:
        """Returns what puts the store back to how it is now, as a restore from a copy (or a
        failover to a replica that lagged) does: every row and sequence."""
        tables = (
            *("journal", "versions", "verdicts", "dead_letters", "positions", "revisions"),
            *("checkpoints", "owners", "withheld", "gaps"),
        )
        saved = {name: list(getattr(self, name)) for name in tables}
        sequences = dict(self.sequences)

        def restore() -> None:
            for name, rows in saved.items():
                setattr(self, name, list(rows))
            self.sequences = dict(sequences)

        return restore

    def sequence(self, name: str, count: int) -> list[int]:
        """Takes ``count`` numbers of a sequence."""
        first = self.sequences.get(name, 1)
        self.sequences[name] = first + count
        return list(range(first, first + count))

    async def stored_position(self, group_id: str, topic: str, partition: int) -> int:
        return self.position_of(group_id, topic, partition)

    def position_of(self, group_id: str, topic: str, partition: int) -> int:
        return self.positions_of(group_id, topic, [partition]).get(partition, -1)

    # the publishers' store (the same database)

    async def rows_after(
        self, outbox: str, topic: str, partition: int, after: int, limit: int
    ) -> list[OutboxRow]:
        rows: list[OutboxRow] = []
        cause = {j.id: j.source_offset for j in self.journal}
        if outbox == "verdicts":
            rows = [
                OutboxRow(v.position, v.game_id.encode(), v.body.encode(), cause.get(v.journal_id))
                for v in self.verdicts
                if (v.source_topic, v.source_partition) == (topic, partition)
            ]
        else:
            rows = [
                OutboxRow(d.position, d.key, d.body.encode(), cause.get(d.journal_id))
                for d in self.dead_letters
                if (d.source_topic, d.source_partition) == (topic, partition)
            ]
        withheld = {w[3] for w in self.withheld if w[:3] == (outbox, topic, partition)}
        return sorted(r for r in rows if r.position > after and r.position not in withheld)[:limit]

    async def published_position(
        self, outbox: str, topic: str, partition: int, cause: int, hint: int
    ) -> int:
        rows = await self.rows_after(outbox, topic, partition, 0, 2**62)
        caused = [r.position for r in rows if r.cause is not None and r.cause <= cause]
        return max(caused, default=0)

    async def withhold(
        self, outbox: str, topic: str, partition: int, row: OutboxRow, reason: str
    ) -> None:
        self.withheld.append((outbox, topic, partition, row.position, reason))

    async def processed_record(
        self, group_id: str, topic: str, partition: int, offset: int
    ) -> bytes | None:
        for j in self.journal:
            if (j.source_topic, j.source_partition, j.source_offset) == (topic, partition, offset):
                return j.raw
        return None

    async def accepted_gap(
        self, group_id: str, topic: str, partition: int, first_missing: int, next_offset: int
    ) -> bool:
        return any(
            g[:3] == (group_id, topic, partition) and g[3] <= first_missing and g[4] >= next_offset
            for g in self.gaps
        )

    async def checkpoint(self, outbox: str, topic: str, partition: int) -> int:
        return max(
            (
                c[3]
                for c in self.checkpoints
                if c[:3] in ((outbox, topic, partition), (outbox, topic, -1))
            ),
            default=0,
        )

    async def save_checkpoints(self, topic: str, partition: int, positions: dict[str, int]) -> None:
        self.checkpoints += [(o, topic, partition, p) for o, p in positions.items()]

    def positions_of(self, group_id: str, topic: str, partitions: Iterable[int]) -> dict[int, int]:
        wanted = set(partitions)
        out: dict[int, int] = {}
        for p in self.positions:
            if p.group_id == group_id and p.topic == topic and p.partition in wanted:
                out[p.partition] = max(out.get(p.partition, -1), p.offset)
        return out

    def _commit(self, staged: list[StepRows]) -> None:
        for rows in staged:
            self.journal += rows.journal
            self.versions += rows.versions
            self.verdicts += rows.verdicts
            self.dead_letters += rows.dead_letters
            self.positions += rows.positions
            self.revisions += rows.revisions
        if staged:
            self.commits += 1


class FakeStepTransaction:
    """The fake store's reads, and a write's rows staged until it commits."""

    def __init__(self, store: FakeStepStore) -> None:
        self.store = store
        self.staged: list[StepRows] = []

    async def load_games(self, game_ids: Sequence[str]) -> list[StoredGame]:
        self.store.loaded_games.append(list(game_ids))
        if self.store.before_load_games is not None:
            await self.store.before_load_games()
        newest: dict[str, GameVersionRow] = {}
        for v in self.store.versions:
            if v.game_id in game_ids and (
                v.game_id not in newest or v.version > newest[v.game_id].version
            ):
                newest[v.game_id] = v
        pinned = {r.game_id: r.rules_revision for r in self.store.revisions}
        return [
            StoredGame(v.game_id, v.version, v.state, pinned.get(v.game_id, 1))
            for v in newest.values()
        ]

    async def load_prints(
        self, seqs: Sequence[tuple[str, int]], event_ids: Sequence[tuple[str, str]]
    ) -> list[StoredPrint]:
        wanted_seqs, wanted_ids = set(seqs), set(event_ids)
        return [
            StoredPrint(r.game_id, r.seq, r.event_id, r.fingerprint)
            for r in self.store.journal
            if r.took_place
            and r.game_id is not None
            and r.seq is not None
            and (
                (r.game_id, r.seq) in wanted_seqs
                or (r.event_id is not None and (r.game_id, r.event_id) in wanted_ids)
            )
        ]

    async def reserve_ids(self, journal: int, verdicts: int, dead_letters: int) -> Reserved:
        self.store.reservations.append(journal)
        # sequences: numbers are never given back
        return Reserved(
            self.store.sequence("journal", journal),
            self.store.sequence("verdicts", verdicts),
            self.store.sequence("dead_letters", dead_letters),
        )

    async def append(self, rows: StepRows) -> None:
        if self.store.refuse is not None:
            failure = self.store.refuse(rows)
            if failure is not None:
                raise failure
        taken = {(r.game_id, r.seq) for r in self.store.journal if r.took_place}
        taken |= {(r.game_id, r.seq) for s in self.staged for r in s.journal if r.took_place}
        for row in rows.journal:
            if row.took_place:
                if (row.game_id, row.seq) in taken:  # the unique index journal_game_seq
                    raise FakeRefusalError(f"place {(row.game_id, row.seq)} is taken twice")
                taken.add((row.game_id, row.seq))
        self.staged.append(rows)


# ------------------------------------------------------------------------- the publishers


Record = tuple[str, int, bytes | None, bytes, int, int | None]
"""(topic, partition, key, value, outbox position, input offset) of a record on the fake
broker."""


@dataclass
class FakeBroker:
    """Topics of a fixed partition count, and the epochs of every transactional id: a producer
    that starts fences every earlier one of its id (its open transaction is aborted, its later
    sends and commits refused)."""

    partitions: int = 4
    committed: list[Record] = field(default_factory=list)
    epochs: dict[str, int] = field(default_factory=dict)
    aborted: int = 0
    started: list[str] = field(default_factory=list)
    """The transactional id of every producer started, in order."""
    input_offsets: dict[int, tuple[int, int]] = field(default_factory=dict)
    """(log start, end) of each input partition (absent: from 0, never ending)."""
    input_records: dict[tuple[int, int], bytes] = field(default_factory=dict)
    """The input records the broker still holds, by (partition, offset), for a survey."""
    headers: list[list[tuple[str, bytes]]] = field(default_factory=list)
    """The headers of every record committed, in the order of ``committed``."""
    transactions: list[list[Record]] = field(default_factory=list)
    """The records of every transaction committed."""


class FakeProducer:
    """A transactional producer on the fake broker; can be told to fail a send, or to wait at a
    gate before it commits (a transaction left open as long as a test likes)."""

    def __init__(
        self,
        broker: FakeBroker,
        transactional_id: str,
        fail_at: int | None = None,
        commit_gate: asyncio.Event | None = None,
    ) -> None:
        self.broker = broker
        self.transactional_id = transactional_id
        self.fail_at = fail_at
        self.commit_gate = commit_gate
        self.epoch = -1
        self.pending: list[Record] = []
        self.pending_headers: list[list[tuple[str, bytes]]] = []
        self.calls: list[str] = []
        self.max_request_size: int | None = None
        """When set, a record larger than this is refused by ``send`` (aiokafka's check)."""
        self.broker_max: int | None = None
        """When set, a record larger than this fails its future (the broker's refusal)."""
        self.sent = 0

    def _fenced(self) -> bool:
        return self.epoch != self.broker.epochs.get(self.transactional_id)

    async def start(self) -> None:
        self.calls.append("start")
        epoch = self.broker.epochs.get(self.transactional_id, 0) + 1
        self.broker.epochs[self.transactional_id] = epoch
        self.broker.started.append(self.transactional_id)
        self.epoch = epoch

    async def stop(self) -> None:
        self.calls.append("stop")

    async def begin_transaction(self) -> None:
        self.calls.append("begin")
        self.pending = []
        self.pending_headers = []

    async def commit_transaction(self) -> None:
        self.calls.append("commit")
        if self.commit_gate is not None:
            await self.commit_gate.wait()
        if self._fenced():
            self.broker.aborted += len(self.pending)
            self.pending = []
            raise ProducerFenced()
        self.broker.committed += self.pending
        self.broker.headers += self.pending_headers
        self.broker.transactions.append(list(self.pending))
        self.pending = []
        self.pending_headers = []

    async def abort_transaction(self) -> None:
        self.calls.append("abort")
        self.broker.aborted += len(self.pending)
        self.pending = []

    async def send(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> asyncio.Future[None]:
        self.calls.append("send")
        size = len(value or b"") + len(key or b"")
        if self.max_request_size is not None and size > self.max_request_size:
            raise MessageSizeTooLargeError(f"the message is {size} bytes")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._fenced():
            future.set_exception(ProducerFenced())
        elif self.fail_at is not None and self.sent == self.fail_at:
            future.set_exception(RuntimeError("broker said no"))
        elif self.broker_max is not None and size > self.broker_max:
            future.set_exception(RecordTooLargeError(f"the record is {size} bytes"))
        else:
            named = dict(headers or [])
            position = int(named["outbox-position"])
            cause = int(named["input-offset"]) if "input-offset" in named else None
            assert partition is not None
            self.pending.append((topic, partition, key, value or b"", position, cause))
            self.pending_headers.append(list(headers or []))
            future.set_result(None)
        self.sent += 1
        return future


class FakeTails:
    """Reads the fake broker's committed records, as ``TopicTails`` reads a real one."""

    def __init__(self, broker: FakeBroker) -> None:
        self.broker = broker
        self.reads = 0

    async def read(self, partitions: list[TopicPartition]) -> dict[TopicPartition, Tail]:
        self.reads += 1
        wanted = set(partitions)
        last: dict[TopicPartition, Tail] = {}
        for topic, partition, _, _, position, cause in self.broker.committed:
            tp = TopicPartition(topic, partition)
            if tp in wanted:
                last[tp] = Tail(position, cause)
        return last

    async def survey(
        self, stored: dict[TopicPartition, int], outputs: list[TopicPartition]
    ) -> Survey:
        inputs = {}
        for tp, at in stored.items():
            start, end = self.broker.input_offsets.get(tp.partition, (0, 2**62))
            record = self.broker.input_records.get((tp.partition, at))
            inputs[tp] = Input(start, end, record)
        return Survey(inputs, await self.read(outputs))
