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

from aiokafka.errors import ProducerFenced

from referee.store.relay_store import Backlog, OutboxRow
from referee.store.rows import (
    DeadLetterRow,
    Fenced,
    GameVersionRow,
    JournalRow,
    Moved,
    PositionRow,
    StepRows,
    StoredGame,
    StoredPrint,
    VerdictRow,
    Written,
)


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
    commits: int = 0
    next_id: int = 1
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
    _locks: dict[tuple[str, str, int], asyncio.Lock] = field(
        default_factory=lambda: defaultdict(asyncio.Lock)
    )

    async def load_positions(
        self, group_id: str, topic: str, partitions: Iterable[int]
    ) -> dict[int, int]:
        return self.positions_of(group_id, topic, partitions)

    async def write(self, group_id: str, fence: Sequence[Fenced], rows: StepRows) -> Written:
        """One fenced transaction: the positions' locks in order, the check, the rows kept
        only if nothing raises (and, with ``commit_gate``, once the gate opens)."""
        held: list[asyncio.Lock] = []
        try:
            for f in sorted(fence):
                lock = self._locks[group_id, f.topic, f.partition]
                await lock.acquire()
                held.append(lock)
                stored = self.stored_position(group_id, f.topic, f.partition)
                if stored != f.expected:
                    return Written(Moved(f.topic, f.partition, stored), None, 0.0)
            tx = FakeStepTransaction(self)
            await tx.append(rows)
            if self.commit_gate is not None:
                await self.commit_gate.wait()
            self._commit(tx.staged)
            return Written(None, None, 0.0)
        finally:
            for lock in held:
                lock.release()

    @asynccontextmanager
    async def reads(self) -> AsyncIterator[FakeStepTransaction]:
        self.reads_opened += 1
        tx = FakeStepTransaction(self)
        yield tx
        assert not tx.staged, "reads() appends nothing"

    def is_outage(self, exc: BaseException) -> bool:
        return isinstance(exc, FakeOutageError)

    def stored_position(self, group_id: str, topic: str, partition: int) -> int:
        return self.positions_of(group_id, topic, [partition]).get(partition, -1)

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
        return [StoredGame(v.game_id, v.version, v.state) for v in newest.values()]

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

    async def reserve_journal_ids(self, count: int) -> list[int]:
        self.store.reservations.append(count)
        first = self.store.next_id
        self.store.next_id += count  # a sequence: ids are never given back
        return list(range(first, first + count))

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


# ------------------------------------------------------------------------------ the relay


@dataclass
class FakeOutbox:
    """An outbox table: (position, key, body) rows, and the relay's checkpoints of it."""

    rows: list[OutboxRow] = field(default_factory=list)
    checkpoints: list[int] = field(default_factory=list)


@dataclass
class FakeRelayStore:
    """The relay's store, in memory: outboxes, checkpoints and the relay lock."""

    outboxes: dict[str, FakeOutbox] = field(
        default_factory=lambda: {"verdicts": FakeOutbox(), "dead_letters": FakeOutbox()}
    )
    holder: FakeRelaySession | None = None
    """The session holding the relay lock."""
    listeners: list[Callable[[], None]] = field(default_factory=list)

    def add(self, outbox: str, key: bytes | None, body: bytes, *, notify: bool = True) -> int:
        """Appends a row; a committed row notifies the listening relay (as NOTIFY does)."""
        rows = self.outboxes[outbox].rows
        position = len(rows) + 1
        rows.append(OutboxRow(position, key, body))
        if notify:
            for wake in list(self.listeners):
                wake()
        return position

    @asynccontextmanager
    async def session(self) -> AsyncIterator[FakeRelaySession]:
        session = FakeRelaySession(self)
        try:
            yield session
        finally:
            if self.holder is session:  # a closed session gives its lock back
                self.holder = None

    async def backlog(self, outbox: str, after: int) -> Backlog:
        return Backlog(sum(1 for r in self.outboxes[outbox].rows if r.position > after), 0.0)

    def sever(self) -> None:
        """Kills the leader's session (pg_terminate_backend): its lock goes at once."""
        if self.holder is not None:
            self.holder.severed = True
            self.holder = None


class FakeRelaySession:
    """One session of the fake relay store; a severed one fails every call."""

    def __init__(self, store: FakeRelayStore) -> None:
        self.store = store
        self.severed = False

    def _alive(self) -> None:
        if self.severed:
            raise FakeOutageError("the session was terminated")

    async def try_lead(self) -> bool:
        self._alive()
        if self.store.holder is None:
            self.store.holder = self
            return True
        return self.store.holder is self

    async def release(self) -> None:
        self._alive()
        if self.store.holder is self:
            self.store.holder = None

    async def listen(self, wake: Callable[[], None]) -> None:
        self._alive()
        self.store.listeners.append(wake)
        self._wake = wake

    async def unlisten(self) -> None:
        wake = getattr(self, "_wake", None)
        if wake is not None and wake in self.store.listeners:
            self.store.listeners.remove(wake)

    async def checkpoint(self, outbox: str) -> int:
        self._alive()
        return max(self.store.outboxes[outbox].checkpoints, default=0)

    async def rows_after(self, outbox: str, cursor: int, limit: int) -> list[OutboxRow]:
        self._alive()
        return [r for r in self.store.outboxes[outbox].rows if r.position > cursor][:limit]

    async def save_checkpoint(self, outbox: str, position: int) -> None:
        self._alive()
        self.store.outboxes[outbox].checkpoints.append(position)


Record = tuple[str, int, bytes | None, bytes, int]
"""(topic, partition, key, value, outbox position) of a record on the fake broker."""


@dataclass
class FakeBroker:
    """Topics of a fixed partition count, and one transactional id's epochs: a producer that
    starts fences every earlier one (its open transaction is aborted, its commit refused)."""

    partitions: int = 4
    committed: list[Record] = field(default_factory=list)
    epoch: int = 0
    aborted: int = 0


class FakeProducer:
    """A transactional producer on the fake broker; can be told to fail a send."""

    def __init__(self, broker: FakeBroker, fail_at: int | None = None) -> None:
        self.broker = broker
        self.fail_at = fail_at
        self.epoch = -1
        self.pending: list[Record] = []
        self.calls: list[str] = []
        self.sent = 0

    async def start(self) -> None:
        self.calls.append("start")
        self.broker.epoch += 1
        self.epoch = self.broker.epoch

    async def stop(self) -> None:
        self.calls.append("stop")

    async def begin_transaction(self) -> None:
        self.calls.append("begin")
        self.pending = []

    async def commit_transaction(self) -> None:
        self.calls.append("commit")
        if self.epoch != self.broker.epoch:
            self.broker.aborted += len(self.pending)
            self.pending = []
            raise ProducerFenced()
        self.broker.committed += self.pending
        self.pending = []

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
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.fail_at is not None and self.sent == self.fail_at:
            future.set_exception(RuntimeError("broker said no"))
        else:
            position = int(dict(headers or [])["outbox-position"])
            assert partition is not None
            self.pending.append((topic, partition, key, value or b"", position))
            future.set_result(None)
        self.sent += 1
        return future


class FakeTails:
    """Reads the fake broker's committed records, as ``TopicTails`` reads a real one."""

    def __init__(self, broker: FakeBroker) -> None:
        self.broker = broker

    async def read(self, topic: str) -> tuple[int, dict[int, int]]:
        last: dict[int, int] = {}
        for t, partition, _, _, position in self.broker.committed:
            if t == topic:
                last[partition] = max(last.get(partition, 0), position)
        return self.broker.partitions, last
