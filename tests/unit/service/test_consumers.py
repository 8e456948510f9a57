"""The instance's side of its consumer processes (``consumers.py``): its probes pass only
when every consumer process's do, and a consumer process that does not answer fails them."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest

from referee.service import consumers
from referee.service.consumers import Consumer


class Answering(Consumer):
    def __init__(self, index: int, answer: dict[str, Any] | None) -> None:
        super().__init__(index, pid=0, control=socket.socket())
        self.answer = answer

    async def ask(self, metrics: bool = False) -> dict[str, Any] | None:
        return self.answer


def good(ready: bool = True, why: str = "ready") -> dict[str, Any]:
    return {"ready": [ready, why], "live": [True, "alive"], "metrics": ""}


async def test_ready_only_when_every_consumer_process_is() -> None:
    both = [Answering(0, good()), Answering(1, good())]
    assert await consumers._checks(both, "ready") == (True, "ready")
    assert await consumers._checks(both, "live") == (True, "alive")
    one = [Answering(0, good()), Answering(1, good(False, "no partitions assigned"))]
    assert await consumers._checks(one, "ready") == (
        False,
        "consumer process 1: no partitions assigned",
    )
    assert await consumers._checks(one, "live") == (True, "alive")
    for c in (*both, *one):
        c.control.close()


async def test_a_consumer_process_that_does_not_answer_fails_both_probes() -> None:
    silent = [Answering(0, None), Answering(1, good())]
    for check in ("ready", "live"):
        assert await consumers._checks(silent, check) == (
            False,
            "consumer process 0 does not answer",
        )
    for c in silent:
        c.control.close()


async def test_an_answer_that_comes_too_late_is_not_taken_for_the_next_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(consumers, "ASK_SECONDS", 0.2)
    ours, theirs = socket.socketpair()
    child_reader, child_writer = await asyncio.open_unix_connection(sock=theirs)
    asked = Consumer(0, pid=0, control=ours)

    async def slow_then_quick() -> None:
        for delay in (0.5, 0.0):  # the first answer comes after its question timed out
            number = (await child_reader.readline()).decode().split()[1]
            await asyncio.sleep(delay)
            answer = {**good(), "n": number, "metrics": f"answer to {number}"}
            child_writer.write(json.dumps(answer).encode() + b"\n")
            await child_writer.drain()

    child = asyncio.create_task(slow_then_quick())
    assert await asked.ask() is None
    await asyncio.sleep(0.4)  # the late answer is on the socket now
    second = await asked.ask(metrics=True)
    assert second is not None
    assert second["metrics"] == "answer to 2"
    await child
    child_writer.close()
    assert asked.writer is not None
    asked.writer.close()
