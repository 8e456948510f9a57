"""The instance's side of the relay process, without a child: what it reads and writes."""

from __future__ import annotations

import asyncio
import time

from referee.service.metrics import Metrics
from referee.service.relay import Outbox
from referee.service.relay_process import RelayProcess


def parent() -> RelayProcess:
    return RelayProcess(
        "postgresql://nobody@127.0.0.1:1/none", [Outbox("verdicts", "v")], Metrics()
    )


async def test_a_heartbeat_sets_when_the_childs_loop_came_round_and_garbage_is_skipped() -> None:
    relay = parent()
    relay.alive_at = 0.0
    reader = asyncio.StreamReader()
    reader.feed_data(b"not json\n")
    reader.feed_data(b'{"alive": 2.5}\n')
    reader.feed_eof()
    before = time.monotonic()
    await relay._read(reader)
    assert before - 2.5 - 0.5 <= relay.alive_at <= time.monotonic() - 2.5


async def test_a_metrics_answer_settles_the_question_in_hand() -> None:
    relay = parent()
    relay._answer = asyncio.get_running_loop().create_future()
    reader = asyncio.StreamReader()
    reader.feed_data(b'{"metrics": [["referee_relay_leader", "h", "gauge", "", []]]}\n')
    reader.feed_eof()
    await relay._read(reader)
    assert relay._answer.result() == [["referee_relay_leader", "h", "gauge", "", []]]


async def test_wakeups_that_come_together_are_written_as_one() -> None:
    relay = parent()

    class Writer:
        def __init__(self) -> None:
            self.lines: list[bytes] = []

        def write(self, data: bytes) -> None:
            self.lines.append(data)

        async def drain(self) -> None:
            await asyncio.sleep(0)

    writer = Writer()
    relay.notify()
    relay.notify()
    forwarding = asyncio.create_task(relay._forward_wakes(writer))  # type: ignore[arg-type]
    await asyncio.sleep(0.01)
    relay.notify()
    await asyncio.sleep(0.01)
    forwarding.cancel()
    assert len(writer.lines) == 2
    assert all(line.startswith(b"w ") for line in writer.lines)
    assert float(writer.lines[-1].split()[1]) == relay.woken_at
