"""The relay's use of its transactional producer, on fakes (the real broker: integration)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from referee.service.app import relay_producer
from referee.service.metrics import Metrics
from referee.service.relay import POSITION_HEADER, Outbox, OutboxRelay, TopicTails, _Progress
from referee.service.settings import Settings


class FakeResult:
    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self.rows = rows

    def all(self) -> list[tuple[Any, ...]]:
        return self.rows


class FakeConnection:
    """Answers the relay's outbox query with the given rows, once."""

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self.rows = rows

    async def execute(self, *_: object) -> FakeResult:
        rows, self.rows = self.rows, []
        return FakeResult(rows)

    async def commit(self) -> None:
        pass


class FakeProducer:
    """Records what the relay asks of a transactional producer; fails a send if told to."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.calls: list[str] = []
        self.sent: list[tuple[str, bytes | None, int | None, dict[str, bytes]]] = []
        self.fail_at = fail_at

    async def start(self) -> None:
        self.calls.append("start")

    async def stop(self) -> None:
        self.calls.append("stop")

    async def begin_transaction(self) -> None:
        self.calls.append("begin")

    async def commit_transaction(self) -> None:
        self.calls.append("commit")

    async def abort_transaction(self) -> None:
        self.calls.append("abort")

    async def send(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> asyncio.Future[Any]:
        self.calls.append("send")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.fail_at is not None and len(self.sent) == self.fail_at:
            future.set_exception(RuntimeError("broker said no"))
        else:
            future.set_result(None)
        self.sent.append((topic, key, partition, dict(headers or [])))
        return future


def relay(producer: FakeProducer) -> OutboxRelay:
    return OutboxRelay(
        None,  # type: ignore[arg-type]  # the pump only uses the connection it is given
        [],
        lambda: producer,
        TopicTails({}),
        Metrics(),
    )


OUTBOX = Outbox("verdicts", "verdicts-topic", "game_id")
ROWS = [(1, "g1", "{}"), (2, "g2", "{}"), (3, "g1", "{}"), (4, "g3", "{}")]


async def test_a_pump_is_one_transaction_in_position_order() -> None:
    producer = FakeProducer()
    state = _Progress(partitions=1, cursor=0)

    moved = await relay(producer)._pump(FakeConnection(ROWS), producer, OUTBOX, state)  # type: ignore[arg-type]

    assert moved == 4
    assert producer.calls == ["begin", "send", "send", "send", "send", "commit"]
    assert [h[POSITION_HEADER] for *_, h in producer.sent] == [b"1", b"2", b"3", b"4"]
    assert state.cursor == 4
    assert state.last == {0: 4}


async def test_rows_already_on_the_topic_are_skipped_and_need_no_transaction() -> None:
    producer = FakeProducer()
    state = _Progress(partitions=1, cursor=0, last={0: 4})

    moved = await relay(producer)._pump(FakeConnection(ROWS), producer, OUTBOX, state)  # type: ignore[arg-type]

    assert moved == 4
    assert producer.calls == []
    assert state.cursor == 4


async def test_a_failed_send_is_never_committed_and_the_term_aborts_it() -> None:
    producer = FakeProducer(fail_at=1)
    state = _Progress(partitions=1, cursor=0)
    r = relay(producer)

    with pytest.raises(RuntimeError, match="broker said no"):
        await r._pump(FakeConnection(ROWS), producer, OUTBOX, state)  # type: ignore[arg-type]
    await r._close(producer)  # type: ignore[arg-type]

    assert "commit" not in producer.calls
    assert producer.calls[-2:] == ["abort", "stop"]
    assert state.cursor == 0
    assert state.last == {}


def test_the_transactional_id_defaults_to_one_per_group() -> None:
    assert Settings(group_id="prod").relay_transactional_id == "referee-relay.prod"
    assert Settings(relay_transactional_id="mine").relay_transactional_id == "mine"


async def test_the_relay_producer_is_transactional_with_that_id() -> None:
    settings = Settings(group_id="prod")
    producer = relay_producer(settings, None)()
    try:
        assert producer._txn_manager.transactional_id == "referee-relay.prod"
    finally:
        await producer.stop()
