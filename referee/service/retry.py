"""Retrying what an outage interrupts: one helper, and the backoff it and the loops share.

Only an outage is retried (``store/errors.py`` says which failures are: the server
unreachable, a serialization failure, a lock or statement timeout...); anything else is
raised at once, and every retry is logged with what failed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from referee.store.errors import is_outage

log = logging.getLogger("referee.retry")

T = TypeVar("T")


@dataclass(slots=True)
class Backoff:
    """Waits that double after each failure in a row, up to a bound; a success resets them."""

    first: float = 0.2
    most: float = 10.0
    _next: float = 0.0

    def failed(self) -> float:
        """Returns how long to wait after one more failure."""
        self._next = self.first if self._next == 0.0 else min(self._next * 2, self.most)
        return self._next

    def succeeded(self) -> None:
        """Starts the waits again from the shortest."""
        self._next = 0.0


async def retrying(
    what: str,
    make: Callable[[], Awaitable[T]],
    *,
    attempts: int = 30,
    backoff: Backoff | None = None,
    retry_on: Callable[[BaseException], bool] = is_outage,
) -> T:
    """Returns ``await make()``, trying again after an outage (``attempts`` times in all)."""
    waits = backoff or Backoff(first=0.2, most=5.0)
    attempt = 1
    while True:
        try:
            result = await make()
        except Exception as exc:
            if not retry_on(exc) or attempt >= attempts:
                raise
            delay = waits.failed()
            log.warning(
                "%s failed; retrying",
                what,
                extra={
                    "attempt": attempt,
                    "retry_in_seconds": delay,
                    "error": f"{type(exc).__name__}: {exc}",
                },
            )
            await asyncio.sleep(delay)
            attempt += 1
        else:
            waits.succeeded()
            return result
