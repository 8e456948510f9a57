"""A partition's life in one place: taken, checked, judged and published, then given back.

As Kafka Streams' task manager does for its tasks, ``Partitions`` keeps one ``Owned`` per
input partition this instance owns and is the only code that changes what the instance
knows of a partition: the consumer's seeks and pauses, the step's positions, games and term
of ownership, the partition's publisher, its metrics. The rebalance listener, the batch
handler and the probes ask it; nothing else touches a partition's state.

**Taking a partition** (in a task of its own, the consumer paused on it meanwhile):

1. a new term of ownership in the store (``referee_take``: under the partition's lock, so a
   batch the previous owner has in flight commits first, and none of its later ones can);
2. the step adopts the partition under that term, from the stored position;
3. the publisher opens: its producer fences the previous owner on Kafka, then it reads how
   far the output topics got and what the input still holds, and says whether the partition
   can be judged (the input needed is there and is the input the store processed);
4. the consumer seeks to the stored position + 1 and resumes.

A partition it cannot judge is **refused**: it stays paused, unpublished, the instance not
ready and saying why, a metric set, one ERROR line; it is tried again every
``REFUSED_RETRY_SECONDS`` (an operator may have restored a newer store, or accepted the
loss). A partition another owner took (its fence or its publisher says so) is **lost**: given
up at once, never fenced back; the group's next assignment says who owns it. A partition the
store no longer holds as this instance knew it (the store went back in time, or an earlier
release's instance wrote it) is **taken again**: a new term, the publisher opened again, the
input judged again from the store's position.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from aiokafka import AIOKafkaConsumer, TopicPartition

from referee.processing.records import OutboxChunk, PositionMoved
from referee.processing.step import ProcessingStep
from referee.service.metrics import Metrics
from referee.service.poll import Polls
from referee.service.publisher import PartitionPublisher, Publishing
from referee.service.retry import Backoff, retrying
from referee.service.takeover import Judged, Preflight
from referee.store.errors import is_outage
from referee.store.rows import Taken, Term

log = logging.getLogger("referee.partitions")

REFUSED_RETRY_SECONDS = 30.0
"""How often a refused partition is tried again."""
FAILING_SECONDS = 30.0
"""How long a publisher may fail in a row before the instance says it is not ready."""

ConsumerOf = Callable[[], AIOKafkaConsumer | None]
"""Returns the group's consumer (None before FastStream has made it)."""


class OwnershipStore(Protocol):
    """The terms of ownership in the store (``store/step_store.py``)."""

    async def take(
        self,
        group_id: str,
        topic: str,
        partitions: Sequence[int],
        owner: str,
        transactional_ids: Sequence[str],
    ) -> list[Taken]:
        """Takes these partitions by a new term each."""

    async def terms(self, group_id: str, topic: str, partitions: Sequence[int]) -> list[Term]:
        """Returns each partition's newest term and stored position."""

    async def give_back(
        self, group_id: str, topic: str, owner: str, terms: Sequence[tuple[int, int, str]]
    ) -> None:
        """Records that these (partition, epoch, transactional id) terms were given back."""


class State(Enum):
    """Where an owned partition is in its life."""

    TAKING = "taking"
    """Its term, its fence and its checks are under way: not consumed yet."""
    RUNNING = "running"
    """Judged and published."""
    REFUSED = "refused"
    """It cannot be judged now (the input it needs is gone, or not what the store processed)."""
    LOST = "lost"
    """Another owner took it: given up until the group assigns it here again."""


@dataclass(slots=True)
class Owned:
    """One input partition this instance owns, and everything it holds of it."""

    partition: int
    state: State = State.TAKING
    epoch: int | None = None
    """The term it is judged and published under (None: not taken yet)."""
    publisher: PartitionPublisher | None = None
    refused: str | None = None
    refused_reason: str = ""
    task: asyncio.Task[None] | None = None
    """The take in progress, or the refused partition's retries."""


@dataclass(frozen=True, slots=True)
class Owner:
    """This instance, as the store's terms of ownership name it."""

    name: str

    @classmethod
    def of_this_process(cls) -> Owner:
        """An owner name unique to this process: host, process id and a random part."""
        return cls(f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}")


@dataclass(slots=True)
class Handover:
    """The publishers of the running partitions, by number: where each committed batch's
    outbox rows go (``ProcessingStep.on_appended``)."""

    topic: str
    publishers: dict[int, PartitionPublisher] = field(default_factory=dict)

    def appended(self, chunks: list[OutboxChunk]) -> None:
        """Hands each partition's chunk to its publisher."""
        topic = self.topic
        for chunk in chunks:
            if chunk.topic == topic and (publisher := self.publishers.get(chunk.partition)):
                publisher.offer(chunk)


class Partitions:
    """Every input partition this instance owns, from its take to its giving back."""

    def __init__(
        self,
        *,
        group_id: str,
        topic: str,
        owner: Owner,
        step: ProcessingStep,
        store: OwnershipStore,
        publishing: Publishing,
        handover: Handover,
        preflight: Preflight | None,
        metrics: Metrics,
        consumer: ConsumerOf,
        polls: Polls,
        ready_requires_partition: bool = True,
    ) -> None:
        self.group_id = group_id
        self.topic = topic
        self.owner = owner
        self.step = step
        self.store = store
        self.publishing = publishing
        self.handover = handover
        self.preflight = preflight
        self.metrics = metrics
        self.consumer = consumer
        self.polls = polls
        self.ready_requires_partition = ready_requires_partition
        self.owned: dict[int, Owned] = {}
        self.joined = False
        """Whether the consumer has had an assignment from its group (an empty one included)."""
        self.judged: Judged | None = None
        """The input topic's partitions the referee judges (from the store), once checked."""
        self.draining: str | None = None
        """Why some input partitions are left unread (added to the topic), if any are."""
        self._lock = asyncio.Lock()
        """Held while partitions change hands (assignment, loss, a new take)."""
        self._stopping = False

    # --- the lifecycle ---------------------------------------------------------------------

    async def check_topics(self) -> None:
        """Checks the topics and takes the publishing over from release 0.1, before the
        consumer joins its group."""
        if self.preflight is None:
            return
        self.judged = await self.preflight.run()
        self.draining = self.judged.draining()
        if self.draining is not None:
            log.error("input partitions left unread: %s", self.draining)

    async def stop(self) -> None:
        """Publishes what was committed (within the publishers' close time), then gives every
        partition back: the next owner knows nothing of this instance is in flight."""
        self._stopping = True
        async with self._lock:
            for owned in self.owned.values():
                await _cancel(owned.task)
            await self._give_back(list(self.owned), drain=True)

    # --- what the rebalance listener says --------------------------------------------------

    async def revoked(self, revoked: set[TopicPartition]) -> None:
        """Writes the batch in flight before the partitions can go to another instance (what
        is known of them stays: they may come back)."""
        await self.step.pause()
        if revoked:
            log.info(
                "partitions revoked", extra={"partitions": sorted(tp.partition for tp in revoked)}
            )

    async def assigned(self, assigned: set[TopicPartition]) -> None:
        """Owns exactly the partitions assigned: keeps those held as the store holds them,
        gives back the others, and takes the new ones (each in a task of its own)."""
        consumer = self._consumer()
        topic = self.topic
        async with self._lock:
            partitions = sorted(tp.partition for tp in assigned if tp.topic == topic)
            judged = self.judged
            if judged is not None and partitions and partitions[-1] >= judged.partitions:
                # partitions added to the topic: theirs wait unread while the others drain
                consumer.pause(*(tp for tp in assigned if tp.partition >= judged.partitions))
                self.draining = judged.draining(partitions[-1] + 1)
                log.error("input partitions left unread: %s", self.draining)
                partitions = [p for p in partitions if p < judged.partitions]
            wanted = set(partitions)
            before = set(self.owned)
            await self._give_back([p for p in self.owned if p not in wanted], drain=False)
            kept = await self._still_held([p for p in partitions if p in self.owned])
            for p in partitions:
                tp = TopicPartition(topic, p)
                if p in kept:
                    consumer.seek(tp, self.step.committed.get((topic, p), -1) + 1)
                elif p in self.owned and self.owned[p].state in (State.TAKING, State.REFUSED):
                    consumer.pause(tp)  # its take or its retries go on
                else:
                    self._begin_take(p, consumer)
            self.joined = True
            self._gauges()
            if wanted != before:
                self.metrics.rebalances.inc()
            log.info("partitions assigned", extra={"partitions": partitions})

    # --- what the batch handler says -------------------------------------------------------

    async def moved(self, moved: PositionMoved) -> None:
        """A write found a partition not as this instance knew it: given up when another owner
        took it; else the store went back or another writer wrote it, and every running
        partition the store does not hold as known is taken again."""
        consumer = self._consumer()
        async with self._lock:
            if moved.lost:
                await self._lose(moved.partition)
                return
            running = [p for p, o in self.owned.items() if o.state is State.RUNNING]
            terms = await retrying(
                "reading the partitions' terms",
                lambda: self.store.terms(self.group_id, self.topic, running),
            )
            for term in terms:
                owned = self.owned[term.partition]
                mine = owned.epoch or 0
                if term.epoch > mine or (term.epoch == mine and term.released):
                    await self._lose(term.partition)
                elif (
                    term.partition == moved.partition
                    or term.epoch != mine
                    or term.stored != self.step.committed.get((self.topic, term.partition), -1)
                ):
                    log.warning(
                        "the store does not hold the partition as this instance knew it (it "
                        "went back in time, or another writer wrote it): taking it again",
                        extra={
                            "partition": term.partition,
                            "stored": term.stored,
                            "known": self.step.committed.get((self.topic, term.partition), -1),
                            "epoch": term.epoch,
                            "mine": mine,
                        },
                    )
                    await self._stop_publisher(owned, drain=False)
                    self._begin_take(term.partition, consumer)
            self._gauges()

    def reseek(self) -> None:
        """Every running partition back to after its stored position: the records of a failed
        batch, and of any batch judged after it, are fetched again."""
        consumer = self.consumer()
        if consumer is None:
            return
        topic = self.topic
        for p, owned in self.owned.items():
            if owned.state is State.RUNNING:
                consumer.seek(TopicPartition(topic, p), self.step.positions.get((topic, p), -1) + 1)

    # --- what the probes and watchers ask --------------------------------------------------

    def running(self) -> list[int]:
        """The partitions judged and published now."""
        return sorted(p for p, o in self.owned.items() if o.state is State.RUNNING)

    def problems(self) -> list[str]:
        """Why this instance cannot do its share now (for /readyz), if it cannot."""
        problems = []
        if self.draining is not None:
            problems.append(self.draining)
        if not self.joined:
            problems.append("not yet assigned by the consumer group")
        elif not self.owned and self.ready_requires_partition:
            problems.append("no partitions assigned")
        now = time.monotonic()
        for p, owned in sorted(self.owned.items()):
            if owned.state is State.REFUSED:
                problems.append(f"partition {p} refused: {owned.refused}")
            publisher = owned.publisher
            since = publisher.health.failing_since if publisher is not None else None
            if since is not None and now - since > FAILING_SECONDS:
                problems.append(
                    f"partition {p}'s publisher cannot publish for {now - since:.0f} s: "
                    f"{publisher.health.last_error if publisher else ''}"
                )
        return problems

    def alive_at(self) -> float:
        """When the least recent of the publishers' loops came round (now, with none)."""
        return min(
            (o.publisher.alive_at for o in self.owned.values() if o.publisher is not None),
            default=time.monotonic(),
        )

    def waiting_records(self) -> int:
        """Returns how many records of the running partitions are not processed yet."""
        consumer = self.consumer()
        if consumer is None:
            return 0
        waiting = 0
        for p in self.running():
            high = consumer.highwater(TopicPartition(self.topic, p))
            if high is not None:
                waiting += max(high - self.step.committed.get((self.topic, p), -1) - 1, 0)
        return waiting

    def update_gauges(self) -> None:
        """Sets the lag of each running partition and what the publishers hold unpublished."""
        consumer = self.consumer()
        metrics = self.metrics
        topic = self.topic
        if consumer is not None:
            for p in self.running():
                high = consumer.highwater(TopicPartition(topic, p))
                if high is not None:
                    done = self.step.committed.get((topic, p), -1) + 1
                    metrics.consumer_lag.labels(topic, str(p)).set(max(high - done, 0))
        rows: dict[str, int] = {"verdicts": 0, "dead_letters": 0}
        oldest: dict[str, float] = {"verdicts": 0.0, "dead_letters": 0.0}
        failing = 0
        for owned in self.owned.values():
            publisher = owned.publisher
            if publisher is None:
                continue
            failing += publisher.health.failing_since is not None
            for outbox, (n, age) in publisher.unpublished().items():
                rows[outbox] += n
                oldest[outbox] = max(oldest[outbox], age)
        for outbox, count in rows.items():
            metrics.relay_unpublished.labels(outbox).set(count)
            metrics.relay_oldest_unpublished.labels(outbox).set(oldest[outbox])
        metrics.publishers_failing.set(failing)

    # --- a partition's life ----------------------------------------------------------------

    def _begin_take(self, partition: int, consumer: AIOKafkaConsumer) -> None:
        """Pauses the partition and takes it in a task of its own."""
        consumer.pause(TopicPartition(self.topic, partition))
        # what batches polled up to now hold of it is stale: the take seeks it again
        self.step.discard((self.topic, partition), self.polls.count)
        owned = self.owned.setdefault(partition, Owned(partition))
        owned.state = State.TAKING
        owned.task = asyncio.create_task(self._take(owned), name=f"take-{partition}")

    async def _take(self, owned: Owned) -> None:
        """Takes the partition, checks it and starts judging and publishing it; a refused
        partition is tried again every ``REFUSED_RETRY_SECONDS``, a failure to reach the
        store or Kafka after a pause."""
        waits = Backoff(first=0.5, most=10.0)
        p = owned.partition
        while not self._stopping:
            try:
                pause = await self._take_once(owned)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                pause = waits.failed()
                log.warning(
                    "taking a partition failed; trying again",
                    exc_info=not is_outage(exc),
                    extra={
                        "partition": p,
                        "retry_in_seconds": pause,
                        "error": f"{type(exc).__name__}: {exc}",
                    },
                )
            if pause is None:
                return
            await asyncio.sleep(pause)

    async def _take_once(self, owned: Owned) -> float | None:
        """One try: returns None once the partition runs, else how long to wait."""
        p = owned.partition
        topic = self.topic
        [taken] = await self.store.take(
            self.group_id, topic, [p], self.owner.name, [self.publishing.transactional_id(p)]
        )
        owned.epoch = taken.epoch
        await self.step.adopt(topic, {p: (taken.epoch, taken.stored)})
        publisher = PartitionPublisher(
            self.publishing,
            p,
            still_owner=lambda: self._still_owner(p, taken.epoch),
            on_lost=self._publisher_lost,
        )
        try:
            opened = await publisher.open(taken.stored)
        except BaseException:
            await publisher.stop(drain=False)
            raise
        if opened.refused is not None:
            self._refuse(owned, opened.refused, opened.reason)
            return REFUSED_RETRY_SECONDS
        consumer = self._consumer()
        async with self._lock:
            if owned.state is not State.TAKING or self.owned.get(p) is not owned:
                await publisher.stop(drain=False)  # given back or lost meanwhile
                return None
            owned.publisher = publisher
            self.handover.publishers[p] = publisher
            publisher.start()
            owned.state = State.RUNNING
            owned.task = None
            self._clear_refusal(owned)
            tp = TopicPartition(topic, p)
            consumer.seek(tp, taken.stored + 1)
            consumer.resume(tp)
            self._gauges()
        log.info(
            "partition taken",
            extra={
                "partition": p,
                "epoch": taken.epoch,
                "stored": taken.stored,
                "previous_owner": taken.previous_owner,
                "store_behind": opened.behind,
            },
        )
        return None

    def _refuse(self, owned: Owned, why: str, reason: str) -> None:
        if owned.refused != why:
            log.error(
                "partition refused: %s",
                why,
                extra={"partition": owned.partition, "reason": reason},
            )
        self._clear_refusal(owned)
        owned.state = State.REFUSED
        owned.refused = why
        owned.refused_reason = reason
        self.metrics.partition_refused.labels(str(owned.partition), reason).set(1)

    def _clear_refusal(self, owned: Owned) -> None:
        if owned.refused_reason:
            with contextlib.suppress(KeyError):
                self.metrics.partition_refused.remove(str(owned.partition), owned.refused_reason)
        owned.refused = None
        owned.refused_reason = ""

    async def _still_owner(self, partition: int, epoch: int) -> bool:
        """Checks the store: is the partition's newest term still ``epoch``, not given back?"""
        [term] = await retrying(
            "reading a partition's term",
            lambda: self.store.terms(self.group_id, self.topic, [partition]),
        )
        return term.epoch == epoch and not term.released

    def _publisher_lost(self, partition: int) -> None:
        """A publisher was fenced by the partition's new owner: the partition is given up."""
        if not self._stopping:
            task = asyncio.create_task(self._lose_locked(partition), name=f"lose-{partition}")
            task.add_done_callback(_logged)

    async def _lose_locked(self, partition: int) -> None:
        async with self._lock:
            await self._lose(partition)

    async def _lose(self, partition: int) -> None:
        """Gives a partition another owner took up: no batch, no publishing, no fencing back,
        until the group assigns it here again."""
        owned = self.owned.get(partition)
        if owned is None or owned.state is State.LOST:
            return
        log.warning(
            "partition taken by another owner: given up until the group assigns it again",
            extra={"partition": partition},
        )
        consumer = self.consumer()
        if consumer is not None:
            with contextlib.suppress(Exception):  # not assigned any more: nothing to pause
                consumer.pause(TopicPartition(self.topic, partition))
        self.step.discard((self.topic, partition), self.polls.count)
        await _cancel(owned.task)
        owned.task = None
        await self._stop_publisher(owned, drain=False)
        await self.step.forget([(self.topic, partition)])
        self._clear_refusal(owned)
        owned.state = State.LOST
        owned.epoch = None
        self.metrics.forget_partition(self.topic, partition)
        self._gauges()

    async def _give_back(self, partitions: list[int], *, drain: bool) -> None:
        """Stops the partitions' publishers and forgets them; the terms held cleanly are
        recorded as given back (nothing of theirs in flight: the next owner need not fence)."""
        if not partitions:
            return
        given: list[tuple[int, int, str]] = []
        for p in partitions:
            owned = self.owned[p]
            await _cancel(owned.task)
            await self._stop_publisher(owned, drain=drain)
            if owned.state is State.RUNNING and owned.epoch is not None:
                given.append((p, owned.epoch, self.publishing.transactional_id(p)))
        await self.step.forget([(self.topic, p) for p in partitions])
        for p in partitions:
            owned = self.owned.pop(p)
            self._clear_refusal(owned)
            self.metrics.forget_partition(self.topic, p)
        try:
            await self.store.give_back(self.group_id, self.topic, self.owner.name, given)
        except Exception as exc:  # noqa: BLE001 - the next owner fences instead
            log.warning(
                "could not record the partitions given back (their next owner fences them)",
                extra={"partitions": [g[0] for g in given], "error": str(exc)},
            )
        self._gauges()

    async def _stop_publisher(self, owned: Owned, *, drain: bool) -> None:
        publisher, owned.publisher = owned.publisher, None
        if publisher is None:
            return
        if self.handover.publishers.get(owned.partition) is publisher:
            del self.handover.publishers[owned.partition]
        await publisher.stop(drain=drain)

    async def _still_held(self, partitions: Iterable[int]) -> set[int]:
        """The running partitions among these that the store holds as this instance knew them
        (its term the newest, the position the one committed): they keep their games and their
        publisher across the rebalance."""
        running = [p for p in partitions if self.owned[p].state is State.RUNNING]
        if not running:
            return set()
        terms = await retrying(
            "reading the partitions' terms",
            lambda: self.store.terms(self.group_id, self.topic, running),
        )
        held = set()
        for term in terms:
            owned = self.owned[term.partition]
            known = self.step.committed.get((self.topic, term.partition), -1)
            if term.epoch == owned.epoch and not term.released and term.stored == known:
                held.add(term.partition)
            else:
                await self._stop_publisher(owned, drain=False)
                owned.state = State.LOST  # taken again below
        return held

    def _gauges(self) -> None:
        metrics = self.metrics
        metrics.assigned.set(sum(o.state is not State.LOST for o in self.owned.values()))
        metrics.relay_partitions.set(len(self.handover.publishers))

    def _consumer(self) -> AIOKafkaConsumer:
        consumer = self.consumer()
        if consumer is None:
            raise RuntimeError("the group's consumer does not exist yet")
        return consumer


async def _cancel(task: asyncio.Task[None] | None) -> None:
    if task is None or task.done() or task is asyncio.current_task():
        return
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def _logged(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.error("giving a partition up failed", exc_info=exc)
