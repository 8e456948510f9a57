"""1b. In-memory replay of an edition-2 log: every family, measured as the main log is."""

from __future__ import annotations

from bench.context import Context
from bench.scenarios.replay import measure


async def run(ctx: Context) -> None:
    """The in-memory replay of the edition-2 log."""
    await measure(ctx, ctx.shared_logs().edition2, "replay2")
