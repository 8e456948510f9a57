"""The processing step on an in-memory store: its delicate parts, in milliseconds.

Fencing, eviction on a failed transaction, the bounded cache, ledgers loaded half from the
store, the quarantine of a record the step cannot write, and the rebalance listener's wait for
the batch in flight. The same guarantees are proven on the real PostgreSQL and Kafka by the
integration and reliability suites; these tests pin the logic.
"""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from referee.contracts.parse import Unparsed
from referee.contracts.rejection import KafkaSource
from referee.processing import ids as ids_module
from referee.processing import slices
from referee.processing.ids import BATCHES
from referee.processing.ledger import Fingerprint, event_print, fingerprint
from referee.processing.referee import Referee
from referee.processing.rows import StepRows
from referee.processing.step import (
    InputRecord,
    PositionMoved,
    ProcessingStep,
    StepResult,
)
from referee.simulate import SimulationOptions, simulate
from tests.fakes import FakeOutageError, FakeRefusalError, FakeStepStore

TOPIC = "game-events"
GROUP = "g"


def records(games: int = 6, seed: int = 3, partitions: int = 2) -> list[InputRecord]:
    """A simulated stream as Kafka records: games spread over partitions, offsets in order."""
    offsets = [0] * partitions
    out = []
    for game_id, line in simulate(SimulationOptions(games=games, seed=seed, concurrency=3)):
        p = zlib.crc32(game_id.encode()) % partitions
        out.append(InputRecord(line, TOPIC, p, offsets[p], KafkaSource(TOPIC, p, offsets[p]), None))
        offsets[p] += 1
    return out


def on(partition: int, stream: list[InputRecord]) -> list[InputRecord]:
    return [r for r in stream if r.partition == partition]


def outcomes(store: FakeStepStore) -> list[tuple[int, int, str, str | None, bool]]:
    return sorted(
        (r.source_partition, r.source_offset, r.outcome, r.reason, r.took_place)
        for r in store.journal
    )


async def straight_run(stream: list[InputRecord], batch: int = 40) -> FakeStepStore:
    """The rows of an uninterrupted run: what every fault must end up equal to."""
    store = FakeStepStore()
    step = ProcessingStep(store, GROUP)
    for i in range(0, len(stream), batch):
        await step.process(stream[i : i + batch])
    return store


STREAM = records()


async def test_a_batch_is_appended_whole_in_one_transaction() -> None:
    store = FakeStepStore()
    step = ProcessingStep(store, GROUP)
    batch = STREAM[:50]
    result = await step.process(batch)
    assert store.commits == 1
    assert result.transactions == 1
    assert [r.id for r in store.journal] == sorted(r.id for r in store.journal)
    assert len(store.journal) == 50
    for p in {r.partition for r in batch}:
        assert store.position_of(GROUP, TOPIC, p) == max(
            r.offset for r in batch if r.partition == p
        )
    assert {v.game_id for v in store.versions} == {json.loads(r.raw)["game_id"] for r in batch}, (
        "one new version per game touched"
    )


async def test_records_at_or_below_the_stored_position_are_skipped() -> None:
    store = FakeStepStore()
    step = ProcessingStep(store, GROUP)
    await step.process(STREAM[:50])
    result = await step.process(STREAM[:60])
    assert result.skipped == 50
    assert len(store.journal) == 60


async def test_a_consumer_that_another_has_overtaken_is_fenced_and_re_seeks() -> None:
    store = FakeStepStore()
    stream = on(0, STREAM)
    old_owner, new_owner = ProcessingStep(store, GROUP), ProcessingStep(store, GROUP)
    await old_owner.adopt(TOPIC, {0: (None, -1)})  # both start from nothing stored
    await new_owner.adopt(TOPIC, {0: (None, -1)})
    await new_owner.process(stream[:10])  # the partition moved on under the old owner
    with pytest.raises(PositionMoved) as moved:
        await old_owner.process(stream[5:15])
    assert (moved.value.partition, moved.value.stored) == (0, 9)
    assert len(store.journal) == 10, "nothing of the fenced batch was kept"
    assert old_owner.positions[TOPIC, 0] == 9, "it knows where to seek"
    await old_owner.process(stream[10:15])  # re-seeked: it goes on after the stored position
    assert [r.source_offset for r in store.journal] == list(range(15))


async def test_a_failed_transaction_evicts_its_games_and_the_retry_is_as_if_it_never_failed() -> (
    None
):
    store = FakeStepStore()
    step = ProcessingStep(store, GROUP)
    await step.process(STREAM[:40])
    failures = [FakeOutageError("the store went away")]
    store.refuse = lambda rows: failures.pop() if failures else None
    batch = STREAM[40:80]
    touched = {json.loads(r.raw)["game_id"] for r in batch}
    tally = step.referee.tally.records
    with pytest.raises(FakeOutageError):
        await step.process(batch)
    assert not touched & set(step.referee.games), "games judged in the failed batch are evicted"
    assert step.referee.tally.records == tally, "a failed batch is not counted"
    await step.process(batch)
    assert sorted(store.loaded_games[-1]) == sorted(touched), "reloaded from the store"
    for i in range(80, len(STREAM), 40):
        await step.process(STREAM[i : i + 40])
    assert outcomes(store) == outcomes(await straight_run(STREAM))


async def test_the_cache_keeps_the_most_recent_games_and_reloads_the_others() -> None:
    store = FakeStepStore()
    step = ProcessingStep(store, GROUP, cache_games=2)
    for i in range(0, len(STREAM), 40):
        await step.process(STREAM[i : i + 40])
        assert len(step.referee.games) <= 2
    assert len(store.loaded_games) > 1, "games left out of the cache were loaded again"
    assert outcomes(store) == outcomes(await straight_run(STREAM))


async def test_a_game_loaded_from_the_store_tells_a_resend_from_a_conflict() -> None:
    store = FakeStepStore()
    await ProcessingStep(store, GROUP).process(STREAM[:60])
    fresh = ProcessingStep(store, GROUP)  # a new process: only the store remembers
    last = STREAM[59]
    event = json.loads(last.raw)
    resend = last._replace(offset=1000, source=KafkaSource(TOPIC, last.partition, 1000))
    conflict = json.dumps({**event, "occurred_at": "2000-01-01T00:00:00Z"}).encode()
    other = resend._replace(raw=conflict, offset=1001)
    await fresh.process([resend, other])
    kept = {r.source_offset: (r.outcome, r.reason) for r in store.journal}
    assert kept[1000] == ("duplicate", None), "the same content at a taken place"
    assert kept[1001] == ("rejected", "seq_conflict"), "other content at a taken place"
    ledger = fresh.referee.games[event["game_id"]]
    assert not ledger.complete, "the ledger holds what was asked of the store, not all"


def refusing(chosen: bytes) -> Callable[[StepRows], BaseException | None]:
    def refuse(rows: StepRows) -> BaseException | None:
        bad = any(r.raw == chosen and r.reason != "internal_error" for r in rows.journal)
        return FakeRefusalError("a value the store refuses") if bad else None

    return refuse


async def test_a_record_the_store_refuses_is_isolated_and_quarantined() -> None:
    chosen = STREAM[70]
    store = FakeStepStore(refuse=refusing(chosen.raw))
    step = ProcessingStep(store, GROUP)
    results = [await step.process(STREAM[i : i + 32]) for i in range(0, len(STREAM), 32)]
    quarantined = [r for r in store.journal if r.reason == "internal_error"]
    assert [(r.raw, r.took_place) for r in quarantined] == [(chosen.raw, False)]
    assert len(store.journal) == len(STREAM), "every record journaled once"
    # 32 -> 16 -> 8 -> 4 -> 2 -> 1: of each split the half without the record commits, and
    # the record is quarantined in a transaction of its own
    assert sum(r.transactions for r in results) == (len(results) - 1) + 5 + 1
    dead = [d for d in store.dead_letters if d.reason == "internal_error"]
    assert len(dead) == 1
    assert "FakeRefusalError: a value the store refuses" in json.loads(dead[0].body)["detail"]


async def test_an_outage_is_raised_and_quarantines_nothing() -> None:
    store = FakeStepStore(refuse=lambda rows: FakeOutageError("unreachable"))
    step = ProcessingStep(store, GROUP)
    with pytest.raises(FakeOutageError):
        await step.process(STREAM[:32])
    assert store.journal == []
    assert store.commits == 0


async def test_a_revocation_waits_for_the_batch_in_flight() -> None:
    store = FakeStepStore()
    step = ProcessingStep(store, GROUP)
    order: list[str] = []
    loading = asyncio.Event()
    release = asyncio.Event()

    async def hold() -> None:
        loading.set()
        await release.wait()

    store.before_load_games = hold
    batch = asyncio.create_task(step.process(STREAM[:40]))
    await loading.wait()
    revoke = asyncio.create_task(step.forget({(TOPIC, 0), (TOPIC, 1)}))
    await asyncio.sleep(0.01)
    assert not revoke.done(), "the listener must not empty the cache under a batch"
    release.set()
    await batch
    order.append("batch")
    await revoke
    order.append("revoke")
    assert order == ["batch", "revoke"]
    assert step.referee.games == {}
    assert len(store.journal) == 40, "the batch committed what it judged"
    assert all(r.outcome != "rejected" or r.reason != "unknown_game" for r in store.journal)


# --- the pipeline: batch N+1 judged while batch N is written --------------------------------


async def pipelined(
    stream: list[InputRecord], store: FakeStepStore, batch: int = 40, **kwargs: Any
) -> tuple[ProcessingStep, list[StepResult]]:
    committed: list[StepResult] = []
    step = ProcessingStep(store, GROUP, on_committed=committed.append, **kwargs)
    for i in range(0, len(stream), batch):
        await step.submit(stream[i : i + batch])
    await step.settle()
    return step, committed


async def test_a_pipelined_run_writes_exactly_what_a_straight_run_writes() -> None:
    store = FakeStepStore()
    _, committed = await pipelined(STREAM, store)
    assert outcomes(store) == outcomes(await straight_run(STREAM))
    offsets = [r.offset for result in committed for r, _ in result.processed]
    assert len(offsets) == len(STREAM), "every batch announced once, when it committed"
    assert store.commits == len(committed)


async def test_the_next_batch_is_judged_while_the_one_before_is_in_flight() -> None:
    store = FakeStepStore(commit_gate=asyncio.Event())
    committed: list[StepResult] = []
    step = ProcessingStep(store, GROUP, on_committed=committed.append)
    await step.submit(STREAM[:40])  # judged; its write waits at the gate
    second = asyncio.create_task(step.submit(STREAM[40:80]))
    await asyncio.sleep(0.01)
    assert step.referee.tally.records == 80, "the second batch is judged already"
    assert store.commits == 0, "nothing committed while the gate is shut"
    assert not committed
    store.commit_gate.set()  # type: ignore[union-attr]
    await second
    await step.settle()
    assert store.commits == 2
    assert [r.offset for res in committed for r, _ in res.processed] == [
        r.offset for r in STREAM[:80]
    ], "batches commit, and are announced, in order"


async def test_a_failed_write_undoes_the_batch_judged_on_top_of_it() -> None:
    store = FakeStepStore()
    step, _ = await pipelined(STREAM[:40], store)
    failures = [FakeOutageError("the store went away")]
    store.refuse = lambda rows: failures.pop() if failures else None
    before = (dict(step.committed), step.referee.tally.records)
    await step.submit(STREAM[40:80])  # its write fails in the background
    with pytest.raises(FakeOutageError):
        await step.submit(STREAM[80:120])  # the failure comes out with the next batch
    assert step.positions == step.committed == before[0], "both batches' positions undone"
    assert step.referee.tally.records == before[1], "neither batch is counted"
    for i in range(40, len(STREAM), 40):  # retried from the stored positions
        await step.submit(STREAM[i : i + 40])
    await step.settle()
    assert outcomes(store) == outcomes(await straight_run(STREAM))


async def test_a_write_refused_for_one_record_isolates_it_and_goes_on() -> None:
    chosen = STREAM[50]
    store = FakeStepStore(refuse=refusing(chosen.raw))
    await pipelined(STREAM, store, batch=32)
    quarantined = [r for r in store.journal if r.reason == "internal_error"]
    assert [r.raw for r in quarantined] == [chosen.raw]
    assert len(store.journal) == len(STREAM)


async def test_games_of_the_batch_in_flight_are_never_evicted_under_it() -> None:
    store = FakeStepStore()
    await pipelined(STREAM, store, batch=20, cache_games=1)
    assert outcomes(store) == outcomes(await straight_run(STREAM)), (
        "a game evicted while its write was in flight would be reloaded stale"
    )


async def test_a_batch_processed_before_is_announced_as_skipped() -> None:
    store = FakeStepStore()
    step, _ = await pipelined(STREAM[:40], store)
    seen: list[StepResult] = []
    step.on_committed = seen.append
    await step.submit(STREAM[:40])
    assert [r.skipped for r in seen] == [40]


async def test_a_revocation_settles_the_write_in_flight_first() -> None:
    store = FakeStepStore(commit_gate=asyncio.Event())
    step = ProcessingStep(store, GROUP)
    await step.submit(STREAM[:40])
    revoke = asyncio.create_task(step.forget({(TOPIC, 0), (TOPIC, 1)}))
    await asyncio.sleep(0.01)
    assert not revoke.done(), "it waits for the write in flight"
    store.commit_gate.set()  # type: ignore[union-attr]
    await revoke
    assert store.commits == 1
    assert step.referee.games == {}


async def test_a_failed_write_evicts_the_games_of_the_next_batch_too() -> None:
    # one game of each partition: a batch of one may go before the other's
    by_partition = {r.partition: json.loads(r.raw)["game_id"] for r in reversed(STREAM)}
    games = [by_partition[0], by_partition[1]]
    a = [r for r in STREAM if json.loads(r.raw)["game_id"] == games[0]]
    b = [r for r in STREAM if json.loads(r.raw)["game_id"] == games[1]]
    assert a[0].partition != b[0].partition
    store = FakeStepStore()
    step = ProcessingStep(store, GROUP)
    for part in (a[:10], b[:10]):
        await step.submit(part)
    await step.settle()
    failures = [FakeOutageError("the store went away")]
    store.refuse = lambda rows: failures.pop() if failures else None
    await step.submit(a[10:20])  # written in the background: it fails
    with pytest.raises(FakeOutageError):
        await step.submit(b[10:20])  # judged on top of the failed batch
    assert games[0] not in step.referee.games, "its own batch failed"
    assert games[1] not in step.referee.games, "judged on a batch that never committed"
    for part in (a[10:20], b[10:20]):
        await step.submit(part)
    await step.settle()
    straight = FakeStepStore()
    again = ProcessingStep(straight, GROUP)
    for part in (a[:10], b[:10], a[10:20], b[10:20]):
        await again.process(part)
    assert outcomes(store) == outcomes(straight)


async def test_decoding_and_judging_a_batch_give_the_event_loop_its_turns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With no time allowed between yields, the step yields after every record it decodes
    # and every record it judges: a batch of slow records cannot hold the loop (the
    # consumer's heartbeats and the probes run on it).
    monkeypatch.setattr(slices, "YIELD_AFTER", 0.0)
    turns = 0
    stop = asyncio.Event()

    async def other_task() -> None:
        nonlocal turns
        while not stop.is_set():
            turns += 1
            await asyncio.sleep(0)

    ticker = asyncio.create_task(other_task())
    await asyncio.sleep(0)
    store = FakeStepStore()
    batch = STREAM[:30]
    before = turns
    await ProcessingStep(store, GROUP).process(batch)
    during = turns - before
    stop.set()
    await ticker
    assert len(store.journal) == 30
    assert during >= 2 * len(batch), f"the loop ran other work {during} times for 30 records"


def game_of(record: InputRecord) -> str:
    game_id: str = json.loads(record.raw)["game_id"]
    return game_id


async def test_a_batch_of_cached_games_reads_nothing_from_the_store() -> None:
    store = FakeStepStore()
    step = ProcessingStep(store, GROUP)
    first = STREAM[:40]
    await step.process(first)
    assert store.reads_opened == 1, "games to load and journal ids to reserve"
    cached = {game_of(r) for r in first}
    later = [r for r in STREAM[40:] if game_of(r) in cached][:30]
    for i in range(0, len(later), 5):
        await step.process(later[i : i + 5])
    assert store.reads_opened == 1, "cached games and ids in hand: no read"
    assert store.commits == 1 + (len(later) + 4) // 5
    ids = [r.id for r in store.journal]
    assert ids == list(range(1, len(first) + len(later) + 1)), "ascending, in processing order"


async def test_large_batches_reserve_journal_ids_for_several_batches_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ids_module, "BLOCK", 8)  # the stream is short
    store = FakeStepStore()
    step = ProcessingStep(store, GROUP)
    size = 5  # a batch of more than the block's quarter: a reservation for four batches
    rounds = 2 * BATCHES
    batches = [STREAM[i : i + size] for i in range(0, size * rounds, size)]
    assert len(batches[-1]) == size, "the stream is long enough"
    for batch in batches:
        await step.process(batch)
    assert store.reservations == [BATCHES * size] * 2
    ids = [r.id for r in store.journal]
    assert ids == list(range(1, len(ids) + 1)), "ascending, in processing order, no gap"
    await step.process(STREAM[size * rounds : size * rounds + 2])  # a small batch: the block
    assert store.reservations[2:] == [8]


async def test_the_ids_in_hand_are_dropped_when_partitions_move() -> None:
    store = FakeStepStore()
    step = ProcessingStep(store, GROUP)
    await step.process(STREAM[:10])
    reserved = store.sequences["journal"]
    await step.forget({(TOPIC, 0), (TOPIC, 1)})
    await step.process(STREAM[10:20])
    assert store.reads_opened == 2
    newer = [r.id for r in store.journal[10:]]
    assert min(newer) == reserved, "a block reserved after every id the step held"
    assert newer == sorted(newer)
    reserved = store.sequences["journal"]
    await step.adopt(TOPIC, {p: (None, store.position_of(GROUP, TOPIC, p)) for p in (0, 1)})
    await step.process(STREAM[20:30])
    assert min(r.id for r in store.journal[20:]) == reserved


async def test_a_consumer_fenced_by_another_numbers_its_next_records_after_the_others() -> None:
    """A zombie owner that kept a block of ids must not journal its records after the new
    owner's with ids from before them: the audit replays the journal in id order."""
    store = FakeStepStore()
    stream = on(0, STREAM)
    zombie, owner = ProcessingStep(store, GROUP), ProcessingStep(store, GROUP)
    await zombie.process(stream[:5])  # a block reserved, five ids used
    # the partition given to another consumer
    await owner.adopt(TOPIC, {0: (None, store.position_of(GROUP, TOPIC, 0))})
    await owner.process(stream[5:10])
    with pytest.raises(PositionMoved):
        await zombie.process(stream[5:15])
    await zombie.process(stream[10:15])  # re-seeked past the other's records, it goes on
    by_id = [r.source_offset for r in sorted(store.journal, key=lambda r: r.id)]
    assert by_id == [r.offset for r in stream[:15]]


async def test_each_journal_fingerprint_is_its_records_and_the_cache_keeps_only_fingerprints() -> (
    None
):
    """The step fingerprints the next event of a known game as it judges it (eager prints);
    every journal row must still carry the fingerprint the lazy definition gives (the
    canonical event's, or the raw bytes' of a record that failed at the edge), and the cache
    must hold fingerprints, never raw records, once the batch is written."""
    first = STREAM[0]
    started = json.loads(first.raw)
    unparsed = b'{"type": "Passed", "game_id": "' + started["game_id"].encode() + b'", "seq": '
    spaced = json.dumps(json.loads(STREAM[1].raw), indent=2).encode()  # same content, respelt
    extra = [
        InputRecord(spaced, TOPIC, 7, 0, KafkaSource(TOPIC, 7, 0), None),
        InputRecord(unparsed, TOPIC, 7, 1, KafkaSource(TOPIC, 7, 1), None),
    ]
    store = FakeStepStore()
    step = ProcessingStep(store, GROUP)
    await step.process(STREAM[:120])
    await step.process(extra)
    assert step.referee.eager_prints
    parsed = [step.referee.parse(r.raw) for r in [*STREAM[:120], *extra]]
    want = [
        fingerprint(raw) if isinstance(p, Unparsed) else event_print(p)
        for raw, p in zip([r.raw for r in [*STREAM[:120], *extra]], parsed, strict=True)
    ]
    assert [r.fingerprint for r in store.journal] == want
    assert store.journal[-2].outcome == "duplicate"
    assert store.journal[-2].fingerprint == store.journal[1].fingerprint
    assert [r.outcome for r in store.journal].count("applied") > 50
    taken = [t for ledger in step.referee.games.values() for t in ledger.by_seq.values()]
    taken += [t for ledger in step.referee.games.values() for t in ledger.by_event_id.values()]
    assert taken
    assert all(isinstance(t, Fingerprint) for t in taken)


def test_eager_and_lazy_prints_give_the_same_outcomes() -> None:
    """The in-memory replay keeps raw records (lazy), the step fingerprints as it judges
    (eager): the outcomes, verdicts and fingerprints must not differ."""
    lazy, eager = Referee(), Referee(eager_prints=True)
    stream = [*STREAM, *STREAM[5:40]]  # resends: duplicates judged against both kinds
    for r in stream:
        a = lazy.process(r.raw, r.source)
        b = eager.process(r.raw, r.source)
        assert (a.outcome, a.seq, a.took_place, a.verdicts, a.rejection) == (
            b.outcome,
            b.seq,
            b.took_place,
            b.verdicts,
            b.rejection,
        )
        assert a.fingerprint == b.fingerprint
    assert any(isinstance(t, Fingerprint) for g in eager.games.values() for t in g.by_seq.values())
    assert not any(
        isinstance(t, Fingerprint) for g in lazy.games.values() for t in g.by_seq.values()
    )


# --- terms of ownership (migration 0012) ------------------------------------------------------


async def take(step: ProcessingStep, store: FakeStepStore, owner: str) -> int:
    """The step adopts partition 0 under a new term of ``owner``, as the service's take does;
    returns the term."""
    [taken] = await store.take(GROUP, TOPIC, [0], owner, [f"txn.{owner}"])
    await step.adopt(TOPIC, {0: (taken.epoch, taken.stored)})
    return taken.epoch


async def test_given_another_owner_took_the_partition_when_the_old_one_writes_then_it_is_lost() -> (
    None
):
    store = FakeStepStore()
    stream = on(0, STREAM)
    zombie, owner = ProcessingStep(store, GROUP), ProcessingStep(store, GROUP)
    await take(zombie, store, "a")
    await zombie.process(stream[:5])
    await take(owner, store, "b")  # the group gave the partition to b; a does not know yet
    with pytest.raises(PositionMoved) as moved:
        await zombie.process(stream[5:10])  # its position is still the stored one
    assert moved.value.lost, "a newer term: another owner's, never fenced back"
    assert len(store.journal) == 5, "nothing of the zombie's batch was written"
    await owner.process(stream[5:10])
    assert [r.source_offset for r in store.journal] == list(range(10))


async def test_given_the_owner_gave_the_partition_back_when_it_writes_again_then_it_is_lost() -> (
    None
):
    store = FakeStepStore()
    step = ProcessingStep(store, GROUP)
    epoch = await take(step, store, "a")
    await step.process(on(0, STREAM)[:5])
    await store.give_back(GROUP, TOPIC, "a", [(0, epoch, "txn.a")])
    with pytest.raises(PositionMoved) as moved:
        await step.process(on(0, STREAM)[5:10])
    assert moved.value.lost


async def test_given_the_store_lost_the_term_when_the_owner_writes_then_it_takes_it_again() -> None:
    """The store went back in time to before this owner's term: the write is refused, and
    not as lost (nobody else took the partition): the owner takes it again."""
    store = FakeStepStore()
    step = ProcessingStep(store, GROUP)
    await take(step, store, "a")
    await step.process(on(0, STREAM)[:5])
    store.owners.clear()  # the restored copy predates the term
    with pytest.raises(PositionMoved) as moved:
        await step.process(on(0, STREAM)[5:10])
    assert not moved.value.lost
    await take(step, store, "a")
    await step.process(on(0, STREAM)[5:10])
    assert len(store.journal) == 10


async def test_given_the_store_lost_commits_when_the_owner_writes_then_it_is_told_where_it_is() -> (
    None
):
    store = FakeStepStore()
    step = ProcessingStep(store, GROUP)
    await take(step, store, "a")
    await step.process(on(0, STREAM)[:5])
    kept = len(store.positions)
    await step.process(on(0, STREAM)[5:10])
    del store.positions[kept:]  # the restored copy has the first batch only
    with pytest.raises(PositionMoved) as moved:
        await step.process(on(0, STREAM)[10:15])
    assert not moved.value.lost
    assert (moved.value.stored, moved.value.expected) == (4, 9)


async def test_an_owning_step_judges_only_the_partitions_it_adopted() -> None:
    store = FakeStepStore()
    step = ProcessingStep(store, GROUP, owned_only=True)
    await take(step, store, "a")
    batch = on(0, STREAM)[:20] + on(1, STREAM)[:20]
    result = await step.process(batch)
    assert {r.source_partition for r in store.journal} == {0}
    assert result.skipped == 20


async def test_records_of_a_partition_in_batches_received_before_its_pause_are_skipped() -> None:
    """A partition paused (to be taken again) when batch 3 had been polled: what batches up to
    3 hold of it is stale, whatever its offsets; from batch 4 on it is judged again."""
    store = FakeStepStore()
    step = ProcessingStep(store, GROUP)
    stream = on(0, STREAM)
    await step.process(stream[:5], received=1)
    step.discard((TOPIC, 0), 3)
    result = await step.process(stream[5:10], received=3)
    assert len(store.journal) == 5
    assert result.processed == []
    await step.process(stream[5:10], received=4)
    assert [r.source_offset for r in store.journal] == list(range(10))
