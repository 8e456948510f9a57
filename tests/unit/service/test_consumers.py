"""The instance's side of its consumer processes (``consumers.py``): its probes pass only
when every consumer process's do, and a consumer process that does not answer fails them."""

from __future__ import annotations

import socket
from typing import Any

from referee.service import consumers
from referee.service.consumers import Consumer


class Answering(Consumer):
    def __init__(self, index: int, answer: dict[str, Any] | None) -> None:
        super().__init__(index, pid=0, control=socket.socket())
        self.answer = answer

    async def ask(self) -> dict[str, Any] | None:
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
