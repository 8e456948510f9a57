"""The two places the referee changes a library's behaviour, in one module, applied once.

Each is a setting the library does not offer; each has a test that holds the library to what
is replaced here (``tests/unit/service/test_patches.py``), so an upgrade that changes it is
seen at once.

1. **aiokafka's retry after ``CONCURRENT_TRANSACTIONS``.** Right after a commit the broker is
   still writing the transaction's markers, and answers the next transaction's
   ``AddPartitionsToTxn`` with ``CONCURRENT_TRANSACTIONS`` until they are written (about a
   millisecond). aiokafka then retries after a fixed 20 ms (``aiokafka.producer.sender.
   BACKOFF_OVERRIDE``, the Java client's figure of KAFKA-5477), so a partition's transactions,
   which follow each other at once whenever verdicts keep coming, would each wait those 20 ms
   (bench/notes.md has the measurement). Set process-wide, once.
2. **FastStream's batch poll.** Its batch subscriber sleeps ``batch_timeout_ms`` after an
   empty poll, so a record arriving in the sleep waits that long; and it has no hook for the
   referee's fair share of a batch between partitions (``poll.py``). The one subscriber of
   the service gets the referee's poll in place of FastStream's ``get_msg``.
"""

from __future__ import annotations

import logging
from typing import Any

import aiokafka.producer.sender as aiokafka_sender

from referee.service.poll import Polls, batch_poll

log = logging.getLogger("referee.patches")

NEXT_TRANSACTION_RETRY_SECONDS = 0.002
"""How soon a transaction's first partitions are asked for again while the one before settles."""


def quicken_next_transaction(seconds: float = NEXT_TRANSACTION_RETRY_SECONDS) -> None:
    """Sets aiokafka's retry after ``CONCURRENT_TRANSACTIONS`` (warns if aiokafka has none)."""
    if not isinstance(getattr(aiokafka_sender, "BACKOFF_OVERRIDE", None), float):
        log.warning("aiokafka has no BACKOFF_OVERRIDE: back-to-back transactions wait its own")
        return
    aiokafka_sender.BACKOFF_OVERRIDE = seconds


def poll_without_idle_sleep(
    subscriber: Any, timeout_ms: int, max_records: int, polls: Polls
) -> None:
    """Gives a FastStream batch subscriber the referee's poll (``poll.batch_poll``)."""
    subscriber.get_msg = batch_poll(timeout_ms, max_records, polls)
