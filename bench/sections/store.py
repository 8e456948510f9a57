"""Section 2: the store replay into PostgreSQL against a raw COPY (``bench.scenarios.store``)."""

from __future__ import annotations

import msgspec

from bench.sections.base import Page, Section, typed
from bench.sections.cells import listed, throughput_row


class Store(msgspec.Struct, frozen=True):
    """``referee replay --database`` of edition 1's log, the best of its runs."""

    events: int
    eps: float
    seconds: float
    wall: float
    wall_eps: float
    ceiling_eps: float
    batch: int
    all_eps: list[float] | None = None
    """Every run's figure (None: a run before they were kept, one run)."""
    all_ceiling_eps: list[float] | None = None


def rows(st: Store) -> list[str]:
    """Its summary row: 25,000 events/s and 0.45 of the ceiling."""
    return [
        throughput_row(
            "2. store replay into PostgreSQL",
            st.eps,
            st.ceiling_eps,
            "lines/s",
            least=25_000,
            ratio_least=0.45,
        )
    ]


def section(st: Store, page: Page) -> list[str]:  # noqa: ARG001 - every section's signature
    """Section 2."""
    return [
        "## 2. Store replay into PostgreSQL",
        "",
        (
            f"The same {st.events:,}-event log through the processing step into a fresh"
            f" database, `--batch-size {st.batch}` (one transaction per batch). Figure: the"
            " command's own timer (after its migration), best of"
            f" {1 if st.all_eps is None else len(st.all_eps)} runs alternating with the"
            " ceiling's; wall clock of the best run's whole command (start-up and migration"
            " included) beside it."
            " Ceiling: the raw lines COPYed by asyncpg into the `journal` table of a freshly"
            " migrated database (the same table and indexes), in batches of the same size"
            " with a commit per batch; the indexed keys (`game_id`, `seq`, `event_id`) read"
            " with msgspec's cheapest probe; best of its runs."
        ),
        "",
        "| | events/s (best) | all runs | seconds |",
        "|---|---|---|---|",
        (
            f"| `referee replay --database` | {st.eps:,.0f} | {listed(st.all_eps or [])} |"
            f" {st.seconds:.1f} (wall {st.wall:.1f} = {st.wall_eps:,.0f}/s) |"
        ),
        (
            f"| ceiling: raw COPY, commit per batch | {st.ceiling_eps:,.0f} |"
            f" {listed(st.all_ceiling_eps or [])} | {st.events / st.ceiling_eps:.1f} |"
        ),
        f"| **ratio** | **{st.eps / st.ceiling_eps:.2f}** | | |",
        "",
    ]


SECTION = Section(lambda results: typed(results, "store", Store), section, rows)
