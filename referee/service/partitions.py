"""A partition's life in one place: taken, checked, judged and published, then given back.

As Kafka Streams' task manager does for its tasks, ``Partitions`` keeps one ``Owned`` per
input partition this instance owns and is the only code that changes what the instance
knows of a partition: the consumer's seeks and pauses, the step's positions, games and term
of ownership, what the publisher publishes of it, its metrics. The rebalance listener, the
batch handler and the probes ask it; nothing else touches a partition's state.

**Taking partitions** (those of one assignment together, in a task of their own, the consumer
paused on them meanwhile):

1. a new term of ownership for each in the store (``referee_take``: under the partition's
   lock, so a batch the previous owner has in flight commits first, and none of its later
   ones can);
2. the step adopts them, each under its term, from the stored position;
3. the previous owners' producers are fenced on Kafka by their transactional ids (named by the
   previous terms; not when a term was given back cleanly, nothing of it being in flight), so
   a transaction of theirs is aborted, or its commit completed, before anything is read;
4. one survey of Kafka: the output partitions' last committed records, and what the input
   partitions still hold; a partition whose input is gone, or is not the input the store
   processed, is **refused**;
5. the instance's publisher publishes each from where its topics got (``input-offset``), and
   the consumer seeks to the stored position + 1 and resumes.

A refused partition stays paused, unpublished, the instance not ready and saying why, a
metric set, one ERROR line; it is tried again every ``REFUSED_RETRY_SECONDS`` (an operator may
have restored a newer store, or accepted the loss). A partition another owner took (its fence
or the publisher's says so) is **lost**: given up at once, never fenced back; the group's next
assignment says who owns it. A partition the store no longer holds as this instance knew it
(the store went back in time, or an earlier release's instance wrote it) is **taken again**.
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
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple, Protocol

from aiokafka import AIOKafkaConsumer, TopicPartition

from referee.processing.records import PositionMoved
from referee.processing.rows import Taken, Term
from referee.processing.step import ProcessingStep
from referee.service.legacy import legacy_transactional_ids
from referee.service.metrics import Metrics
from referee.service.poll import Polls
from referee.service.publisher import START_SECONDS, Publisher, Publishing, read_cursors
from referee.service.retry import Backoff, retrying
from referee.service.tails import Input, Survey
from referee.service.takeover import Judged, Preflight
from referee.store.errors import is_outage

log = logging.getLogger("referee.partitions")

REFUSED_RETRY_SECONDS = 30.0
"""How often a refused partition is tried again."""
FAILING_SECONDS = 30.0
"""How long the publisher may fail in a row before the instance says it is not ready."""

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
    """One input partition this instance owns."""

    partition: int
    state: State = State.TAKING
    epoch: int | None = None
    """The term it is judged and published under (None: not taken yet)."""
    refused: str | None = None
    refused_reason: str = ""
    task: asyncio.Task[None] | None = None
    """The take in progress (shared by the partitions of one assignment), or the refused
    partition's retries."""
    since: float = 0.0
    """When its take began (``time.monotonic``)."""


@dataclass(frozen=True, slots=True)
class Owner:
    """This instance: a name for people, and the name its transactional id carries."""

    name: str
    instance: str

    @classmethod
    def of_this_process(cls) -> Owner:
        """An owner unique to this process: host, process id and a random part."""
        random = uuid.uuid4().hex[:12]
        return cls(f"{socket.gethostname()}/{os.getpid()}/{random}", f"i-{random}")


class Refusal(NamedTuple):
    """Why a partition cannot be judged now, and a short code for the metric."""

    why: str
    reason: str
    """``input_gone`` or ``input_recreated``."""


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
        publisher: Publisher,
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
        self.publisher = publisher
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

    async def start(self) -> None:
        """Checks the topics and takes the publishing over from release 0.1, before the
        consumer joins its group; starts the publisher."""
        if self.preflight is not None:
            self.judged = await self.preflight.run()
            self.draining = self.judged.draining()
            if self.draining is not None:
                log.error("input partitions left unread: %s", self.draining)
        self.publisher.start()

    async def stop(self) -> None:
        """Publishes what was committed (within the publisher's close time), then gives every
        partition back: the next owner knows nothing of this instance is in flight."""
        self._stopping = True
        async with self._lock:
            for owned in self.owned.values():
                await _cancel(owned.task)
            clean = await self.publisher.stop(drain=True)
            await self._give_back(list(self.owned), clean=clean)

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
        gives back the others, and takes the new ones (together, in a task of their own)."""
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
            await self._give_back([p for p in self.owned if p not in wanted])
            # the handler may have put a batch in flight since the revocation settled the
            # step: settled, and the step's writes held back, the store says of a partition
            # this instance ran what the step knows (else a kept partition is taken again)
            async with self.step.settled() as failure:
                if failure is not None:
                    log.warning(
                        "a batch in flight failed at the rebalance (its records are read again)",
                        extra={"error": f"{type(failure).__name__}: {failure}"},
                    )
                kept = await self._still_held([p for p in partitions if p in self.owned])
            new = []
            for p in partitions:
                tp = TopicPartition(topic, p)
                if p in kept:
                    consumer.seek(tp, self.step.committed.get((topic, p), -1) + 1)
                elif p in self.owned and self.owned[p].state in (State.TAKING, State.REFUSED):
                    consumer.pause(tp)  # its take or its retries go on
                else:
                    new.append(p)
            if new:
                self._begin_take(new, consumer)
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
            again = []
            for term in terms:
                owned = self.owned[term.partition]
                mine = owned.epoch or 0
                known = self.step.committed.get((self.topic, term.partition), -1)
                if term.epoch > mine or (term.epoch == mine and term.released):
                    await self._lose(term.partition)
                elif (
                    term.partition == moved.partition or term.epoch != mine or term.stored != known
                ):
                    log.warning(
                        "the store does not hold the partition as this instance knew it (it "
                        "went back in time, or another writer wrote it): taking it again",
                        extra={
                            "partition": term.partition,
                            "stored": term.stored,
                            "known": known,
                            "epoch": term.epoch,
                            "mine": mine,
                        },
                    )
                    again.append(term.partition)
            if again:
                # nothing of theirs in flight once this returns: the take reads the topics after
                await self.publisher.remove(again)
                self._begin_take(again, consumer)
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
        taking = self.taking()
        if taking:
            problems.append(f"taking partitions {', '.join(map(str, taking))}")
        problems += [
            f"partition {p} refused: {owned.refused}"
            for p, owned in sorted(self.owned.items())
            if owned.state is State.REFUSED
        ]
        health = self.publisher.health
        since = health.failing_since
        now = time.monotonic()
        if since is not None and now - since > FAILING_SECONDS:
            problems.append(
                f"the publisher cannot publish for {now - since:.0f} s: {health.last_error}"
            )
        return problems

    def taking(self) -> list[int]:
        """The partitions whose take is under way (not consumed yet)."""
        return sorted(p for p, o in self.owned.items() if o.state is State.TAKING)

    def taking_since(self) -> float | None:
        """When the oldest take under way began (None: none is)."""
        return min((o.since for o in self.owned.values() if o.state is State.TAKING), default=None)

    def alive_at(self) -> float:
        """When the publisher's loop last came round (now, with no partition)."""
        return self.publisher.alive_at if self.owned else time.monotonic()

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

    async def watch(self) -> None:
        """Gives up the partitions the publisher found taken by a new owner, and sets the lag
        of each running partition and what the publisher holds unpublished."""
        lost = self.publisher.lost & set(self.owned)
        if lost:
            async with self._lock:
                for p in sorted(lost):
                    await self._lose(p)
        consumer = self.consumer()
        metrics = self.metrics
        topic = self.topic
        if consumer is not None:
            for p in self.running():
                high = consumer.highwater(TopicPartition(topic, p))
                if high is not None:
                    done = self.step.committed.get((topic, p), -1) + 1
                    metrics.consumer_lag.labels(topic, str(p)).set(max(high - done, 0))
        for outbox, (n, age) in self.publisher.unpublished().items():
            metrics.relay_unpublished.labels(outbox).set(n)
            metrics.relay_oldest_unpublished.labels(outbox).set(age)
        metrics.publishers_failing.set(int(self.publisher.health.failing_since is not None))

    # --- a partition's life ----------------------------------------------------------------

    def _begin_take(self, partitions: list[int], consumer: AIOKafkaConsumer) -> None:
        """Pauses the partitions and takes them in a task of their own."""
        topic = self.topic
        owned = []
        for p in partitions:
            consumer.pause(TopicPartition(topic, p))
            # what batches polled up to now hold of it is stale: the take seeks it again
            self.step.discard((topic, p), self.polls.count)
            one = self.owned.setdefault(p, Owned(p))
            one.state = State.TAKING
            one.since = time.monotonic()
            owned.append(one)
        task = asyncio.create_task(self._take(owned), name=f"take-{partitions}")
        for one in owned:
            one.task = task

    async def _take(self, owned: list[Owned]) -> None:
        """Takes the partitions, checks them and starts judging and publishing them; refused
        ones are tried again every ``REFUSED_RETRY_SECONDS``, a failure to reach the store or
        Kafka after a pause."""
        waits = Backoff(first=0.5, most=10.0)
        me = asyncio.current_task()
        todo = owned
        while todo and not self._stopping:
            todo = [o for o in todo if o.task is me and self.owned.get(o.partition) is o]
            if not todo:
                return
            try:
                todo = await self._take_once(todo)
                pause = REFUSED_RETRY_SECONDS
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                pause = waits.failed()
                log.warning(
                    "taking partitions failed; trying again",
                    exc_info=not is_outage(exc),
                    extra={
                        "partitions": [o.partition for o in todo],
                        "retry_in_seconds": pause,
                        "error": f"{type(exc).__name__}: {exc}",
                    },
                )
            if todo:
                await asyncio.sleep(pause)

    async def _take_once(self, owned: list[Owned]) -> list[Owned]:
        """One try: returns the partitions refused (the others run)."""
        topic = self.topic
        p = self.publishing
        publisher = self.publisher
        await asyncio.wait_for(publisher.ready.wait(), START_SECONDS)
        partitions = [o.partition for o in owned]
        taken = await self.store.take(
            self.group_id,
            topic,
            partitions,
            self.owner.name,
            [publisher.transactional_id] * len(partitions),
        )
        by_partition = {t.partition: t for t in taken}
        me = asyncio.current_task()
        async with self._lock:  # not given back or lost meanwhile, or the step forgets it
            mine = [o for o in owned if o.task is me and self.owned.get(o.partition) is o]
            for o in mine:
                o.epoch = by_partition[o.partition].epoch
            await self.step.adopt(
                topic, {o.partition: (o.epoch, by_partition[o.partition].stored) for o in mine}
            )
        await self._fence_previous(taken)
        survey = await p.tails.survey(
            {TopicPartition(topic, t.partition): t.stored for t in taken},
            [TopicPartition(o.topic, t.partition) for t in taken for o in p.outboxes],
        )
        refused = {}
        for t in taken:
            refusal = await self._refusal(t, survey)
            if refusal is not None:
                refused[t.partition] = refusal
        running = [t for t in taken if t.partition not in refused]
        cursors, behind = await read_cursors(p, [t.partition for t in running], survey.tails)
        consumer = self._consumer()
        async with self._lock:
            for o in owned:
                if o.task is not me or self.owned.get(o.partition) is not o:
                    if o.partition not in self.owned:  # given back meanwhile, not taken since
                        await self.step.forget([(topic, o.partition)])
                    continue
                t = by_partition[o.partition]
                if o.partition in refused:
                    self._refuse(o, *refused[o.partition])
                    continue
                publisher.add(o.partition, t.epoch, cursors[o.partition])
                o.state = State.RUNNING
                o.task = None
                self._clear_refusal(o)
                tp = TopicPartition(topic, o.partition)
                consumer.seek(tp, t.stored + 1)
                consumer.resume(tp)
                if o.partition in behind:
                    self.metrics.store_behind.inc()
                    log.warning(
                        "the output topics hold records of input the store has not processed "
                        "(the store lost commits): judging it again, publishing only what the "
                        "topics lack",
                        extra={
                            "partition": o.partition,
                            "stored": t.stored,
                            "published_through": {
                                n: c.cause for n, c in cursors[o.partition].items()
                            },
                        },
                    )
                log.info(
                    "partition taken",
                    extra={
                        "partition": o.partition,
                        "epoch": t.epoch,
                        "stored": t.stored,
                        "previous_owner": t.previous_owner,
                        "store_behind": o.partition in behind,
                    },
                )
            self._gauges()
        return [o for o in owned if o.partition in refused]

    async def _fence_previous(self, taken: list[Taken]) -> None:
        """Fences the previous owners' producers by their transactional ids: an open
        transaction of theirs is aborted, or a commit under way completed, before this returns,
        and their later sends fail. A term given back cleanly has nothing in flight."""
        mine = self.publisher.transactional_id
        ids = set(legacy_transactional_ids(self.publishing, [t.partition for t in taken]))
        for t in taken:
            previous = t.previous_transactional_id
            if t.previous_epoch and not t.previous_released and previous and previous != mine:
                ids.add(previous)
        await asyncio.gather(*(self._fence(i) for i in sorted(ids)))

    async def _fence(self, transactional_id: str) -> None:
        producer = self.publishing.make_producer(transactional_id)
        try:
            await asyncio.wait_for(producer.start(), START_SECONDS)
        finally:
            with contextlib.suppress(Exception):
                await producer.stop()

    async def _refusal(self, taken: Taken, survey: Survey) -> Refusal | None:
        """Says why a partition cannot be judged from its stored position, if it cannot."""
        p = self.publishing
        tp = TopicPartition(self.topic, taken.partition)
        journaled = None
        if survey.inputs[tp].record is not None and taken.stored >= 0:
            journaled = await p.store.processed_record(
                self.group_id, self.topic, taken.partition, taken.stored
            )
        published = max(
            (
                tail.cause
                for o in p.outboxes
                if (tail := survey.tails.get(TopicPartition(o.topic, taken.partition)))
                and tail.cause is not None
            ),
            default=-1,
        )
        start = survey.inputs[tp].log_start
        needed = taken.stored + 1
        accepted = start > needed and await p.store.accepted_gap(
            self.group_id, self.topic, taken.partition, needed, start
        )
        return refusal(
            survey.inputs[tp], taken.stored, taken.partition, journaled, published, accepted
        )

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
        owned.task = None  # a take in progress leaves it alone
        await self.publisher.remove([partition])
        await self.step.forget([(self.topic, partition)])
        self._clear_refusal(owned)
        owned.state = State.LOST
        owned.epoch = None
        self.metrics.forget_partition(self.topic, partition)
        self._gauges()

    async def _give_back(self, partitions: list[int], *, clean: bool = True) -> None:
        """Stops publishing the partitions and forgets them; the terms held cleanly are
        recorded as given back (nothing of theirs in flight: the next owner need not fence),
        unless the publisher may have left a transaction open (``clean`` false)."""
        if not partitions:
            return
        given: list[tuple[int, int, str]] = []
        await self.publisher.remove(partitions)  # a take in progress leaves them alone
        for p in partitions:
            owned = self.owned[p]
            if clean and owned.state is State.RUNNING and owned.epoch is not None:
                given.append((p, owned.epoch, self.publisher.transactional_id))
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

    async def _still_held(self, partitions: Iterable[int]) -> set[int]:
        """The running partitions among these that the store holds as this instance knew them
        (its term the newest, the position the one committed): they keep their games and their
        place in the publisher across the rebalance."""
        running = [p for p in partitions if self.owned[p].state is State.RUNNING]
        if not running:
            return set()
        terms = await retrying(
            "reading the partitions' terms",
            lambda: self.store.terms(self.group_id, self.topic, running),
        )
        held = set()
        moved = []
        for term in terms:
            owned = self.owned[term.partition]
            known = self.step.committed.get((self.topic, term.partition), -1)
            if term.epoch == owned.epoch and not term.released and term.stored == known:
                held.add(term.partition)
            else:
                moved.append(term.partition)
                owned.state = State.LOST  # taken again
        await self.publisher.remove(moved)
        return held

    def _gauges(self) -> None:
        metrics = self.metrics
        metrics.assigned.set(sum(o.state is not State.LOST for o in self.owned.values()))
        metrics.relay_partitions.set(len(self.publisher.partitions))

    def _consumer(self) -> AIOKafkaConsumer:
        consumer = self.consumer()
        if consumer is None:
            raise RuntimeError("the group's consumer does not exist yet")
        return consumer


def refusal(
    found: Input,
    stored: int,
    partition: int,
    journaled: bytes | None,
    published: int,
    accepted: bool,
) -> Refusal | None:
    """Says why an input partition cannot be judged from ``stored`` + 1 (its last processed
    offset in the store, -1: none), if it cannot: the input it needs is gone (``published``:
    the input offset of the last record on its output topics, past ``stored`` when the store
    lost commits), or it is not the input the store processed (``journaled``: the store's
    bytes of the record at ``stored``, compared with ``found.record``)."""
    start, end = found.log_start, found.end
    if stored >= 0 and stored >= end:
        return Refusal(
            f"the input partition ends at offset {end} but the store processed it up to "
            f"{stored}: the input topic was deleted and made again, or the store belongs to "
            "another cluster (docs/runbook.md, 'A partition refused')",
            "input_recreated",
        )
    if found.record is not None and journaled is not None and journaled != found.record:
        return Refusal(
            f"the input record at offset {stored} is not the one the store processed there: "
            "the input topic was deleted and made again (docs/runbook.md, 'A partition "
            "refused')",
            "input_recreated",
        )
    needed = stored + 1
    if start > needed and (stored >= 0 or published > stored) and not accepted:
        why = (
            "the store lost commits the output topics hold (it went back in time) and "
            if published > stored
            else ""
        )
        return Refusal(
            f"{why}the input it needs is gone: offsets {needed} to {start - 1} of the input "
            f"partition were deleted before the referee processed them (the log now starts at "
            f"{start}). Restore a newer copy of the store, or accept the loss with `referee "
            f"partitions --accept-gap {partition}` (docs/runbook.md, 'A partition refused')",
            "input_gone",
        )
    return None


async def _cancel(task: asyncio.Task[None] | None) -> None:
    if task is None or task.done() or task is asyncio.current_task():
        return
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
