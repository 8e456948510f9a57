"""The scenarios of a full run, in the order they run.

A scenario is a module with one async entry function taking the context; it reads the shared
logs (``Context.shared_logs``), records its figures under its name in ``Context.results`` and
the commands it ran with ``Context.note``. Its section of the report (``bench.sections``) reads
those results as types and renders them. To add one: a module here, a line in ``SCENARIOS``
(its name is what ``--only`` selects), and its section (``bench/sections/__init__.py`` says
how).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bench.context import Context
from bench.scenarios import (
    cluster,
    e2e,
    latency,
    memory,
    owners,
    relay,
    replay,
    replay2,
    seasons,
    store,
    sweep,
)

Scenario = Callable[[Context], Awaitable[None]]

SCENARIOS: dict[str, Scenario] = {
    "replay": replay.run,
    "replay2": replay2.run,
    "store": store.run,
    "e2e": e2e.run,
    "latency": latency.run,
    "sweep": sweep.run,
    "memory": memory.run,
    "relay": relay.run,
    "cluster": cluster.run,
    "owners": owners.run,
    "seasons": seasons.run,
}
