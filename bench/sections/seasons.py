"""Section 10: a store that lives for seasons: bytes, the archive, ``audit --archive``, and
latency while archiving (``bench.scenarios.seasons``)."""

from __future__ import annotations

import statistics

import msgspec

from bench.sections.base import Page, Section, typed
from bench.sections.latency import Load

PARTITIONED = ("journal", "game_versions", "verdicts", "dead_letters", "consumer_positions")

Tables = dict[str, int]
"""Bytes by table (a partitioned table's partitions counted under it), or by the archive's
top directory."""


class Archived(msgspec.Struct, frozen=True):
    """What one ``referee archive`` run said it did."""

    segments: int
    rows: int
    files: int
    carried_states: int
    carried_positions: int
    carried_prints: int


class ArchiveRun(Archived, frozen=True):
    """An archive of a copy of the store, timed."""

    seconds: float
    rows_per_s: float


class Timed(msgspec.Struct, frozen=True):
    """A command's wall clock (start-up included)."""

    seconds: float
    eps: float
    load: str
    """The load average after it."""


class Read(msgspec.Struct, frozen=True):
    """The ceiling: the archive's files read and decoded to Python rows."""

    rows: int
    seconds: float
    rows_per_s: float


class SeasonRound(msgspec.Struct, frozen=True):
    """One round: the live audit, an archive, its ceiling, ``audit --archive``."""

    audit_live: Timed
    archive: ArchiveRun
    ceiling: Read
    audit_archive: Timed


class KeepDefault(Archived, frozen=True):
    """The archive with ``REFEREE_ARCHIVE_KEEP_PRINTS`` at its default."""

    live_after: Tables


class ArchiveLoopRun(msgspec.Struct, frozen=True):
    """One of the archive runs during a latency run."""

    error: str | None = None


class ArchivingLoad(Load, frozen=True):
    """``referee serve`` at 1,000 events/s, with an archive running or not."""

    archiving: bool = False
    load_average: str = ""
    archive_overlap: float = 0.0
    """The share of the window an archive was running."""
    archived_rows: int = 0
    archive_runs: list[ArchiveLoopRun] = msgspec.field(default_factory=list)


class Compared(msgspec.Struct, frozen=True):
    """One log's store replay, before and after (events/s of each run)."""

    runs: dict[str, list[float]]
    events: int
    load: str


class BeforeAfter(msgspec.Struct, frozen=True):
    """The store replay before migration 0010 and after (``--seasons-before``)."""

    edition1: Compared
    mix: Compared


class Seasons(msgspec.Struct, frozen=True):
    """The mix's log replayed into a store of minute partitions, then archived."""

    log: str
    games: int
    log_bytes: int
    events: int
    replay_eps: float
    live: Tables
    load_replay: str
    archive_bytes: Tables
    live_after: Tables
    keep_default: KeepDefault
    archived: Archived | None = None
    """The one archive of ``--seasons-bytes-only``."""
    rounds: list[SeasonRound] | None = None
    """None: ``--seasons-bytes-only``."""
    noop_archive_seconds: float = 0.0
    empty_audit_seconds: float = 0.0
    latency: list[ArchivingLoad] | None = None
    before_after: BeforeAfter | None = None


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 1e6 else f"{n / 1e3:,.0f} kB"


class _Best(msgspec.Struct, frozen=True):
    archive: ArchiveRun
    ceiling: Read
    audit: Timed
    live: Timed


def _best(rounds: list[SeasonRound]) -> _Best:
    """The best round of each measurement."""
    return _Best(
        max((r.archive for r in rounds), key=lambda x: x.rows_per_s),
        max((r.ceiling for r in rounds), key=lambda x: x.rows_per_s),
        max((r.audit_archive for r in rounds), key=lambda x: x.eps),
        max((r.audit_live for r in rounds), key=lambda x: x.eps),
    )


def _p99s(rows: list[ArchivingLoad], *, archiving: bool) -> list[float]:
    return [x.p99 for x in rows if x.archiving is archiving]


def rows(r: Seasons) -> list[str]:
    """Its summary rows."""
    events = r.events
    out = [
        (
            f"| 10. bytes an event, the mix ({events:,} events) | (reported) | PostgreSQL"
            f" {sum(r.live.values()) / events:,.0f} B, archive"
            f" {sum(r.archive_bytes.values()) / events:,.0f} B | | | |"
        )
    ]
    if not r.rounds:  # --seasons-bytes-only
        return out
    best = _best(r.rounds)
    out += [
        (
            f"| 10. `referee archive` | (reported) | {best.archive.rows_per_s:,.0f} rows/s |"
            f" {best.ceiling.rows_per_s:,.0f} rows/s (read the files) |"
            f" {best.archive.rows_per_s / best.ceiling.rows_per_s:.3f} | |"
        ),
        (
            f"| 10. `referee audit --archive` | (reported) | {best.audit.eps:,.0f} events/s |"
            f" {best.live.eps:,.0f} events/s (`audit`, all live) |"
            f" {best.audit.eps / best.live.eps:.2f} | |"
        ),
    ]
    if r.latency:
        with_ = _p99s(r.latency, archiving=True)
        without = _p99s(r.latency, archiving=False)
        out.append(
            f"| 10. latency at 1,000 events/s while `referee archive` runs | (reported) |"
            f" p99 {', '.join(f'{v:.0f}' for v in with_)} ms |"
            f" without: {', '.join(f'{v:.0f}' for v in without)} ms |"
            f" {statistics.median(with_) / statistics.median(without):.2f} | |"
        )
    return out


def _bytes_rows(label: str, tables: Tables, events: int) -> list[str]:
    total = sum(tables.values())
    rows = [f"| **{label}** | **{_mb(total)}** | **{total / events:,.0f}** |"]
    named = [t for t in (*PARTITIONED, "carried_prints", "manifests") if t in tables]
    rows += [f"| &nbsp;&nbsp;`{t}` | {_mb(tables[t])} | {tables[t] / events:,.1f} |" for t in named]
    rest = total - sum(tables[t] for t in named)
    if rest:
        others = ", ".join(f"`{t}`" for t in sorted(tables) if t not in named)
        rows.append(f"| &nbsp;&nbsp;the other tables ({others}) | {_mb(rest)} |"
                    f" {rest / events:,.1f} |")  # fmt: skip
    return rows


def section(r: Seasons, page: Page) -> list[str]:  # noqa: ARG001 - every section's signature
    """Section 10: bytes, the archive's and the audit's throughput, latency while archiving."""
    events = r.events
    rounds = r.rounds
    keep = r.keep_default
    first = rounds[0].archive if rounds else r.archived
    if first is None:
        raise ValueError("the seasons results hold neither rounds nor the one archive")
    out = [
        "## 10. A store that lives for seasons: bytes, archive, audit --archive",
        "",
        (
            f"Log: `referee simulate --games {r.games} --seed 7` (`{r.log}`, the default"
            f" mix of every family) = {events:,} events, {_mb(r.log_bytes)} of JSON Lines."
            " Replayed once (`referee replay LOG --database URL --source-name s --output"
            " /dev/null`,"
            f" {r.replay_eps:,.0f} events/s, load {r.load_replay}) into a fresh database"
            " with partitions of a minute (`REFEREE_PARTITION_INTERVAL=1m`,"
            " `REFEREE_PARTITIONS_AHEAD=1`), then one partition a table of a day after them,"
            " made by hand, for what is written later (so every copy has the same ended"
            " segments whenever it is archived); once the partitions of a minute had ended,"
            " and a minute more after the last row, every measurement ran"
            " on a copy of that database (`CREATE DATABASE ... TEMPLATE`), so each archive run"
            " had the same work: every row of the log. Archives went to a local directory"
            " with `REFEREE_ARCHIVE_KEEP_PRINTS=1m` (the prints of finished games are past it,"
            " as archived games are in service under the 7-day default) and `--before` the"
            " moment of the run. Bytes: `pg_total_relation_size` (table, indexes, TOAST) of"
            " every table of the schema, each partition counted under its table; the archive's"
            " files (Parquet, zstd level 3, and the manifest) by `stat`."
        ),
        "",
        "| | bytes | bytes an event |",
        "|---|---|---|",
        f"| the log (JSON Lines) | {_mb(r.log_bytes)} | {r.log_bytes / events:,.0f} |",
        *_bytes_rows("PostgreSQL, everything live", r.live, events),
        *_bytes_rows("the archive of all of it", r.archive_bytes, events),
        *_bytes_rows("PostgreSQL after archiving everything", r.live_after, events),
        (
            f"| PostgreSQL after archiving, `REFEREE_ARCHIVE_KEEP_PRINTS` at its default (7"
            f" days: every print kept) | {_mb(sum(keep.live_after.values()))} |"
            f" {sum(keep.live_after.values()) / events:,.0f} |"
        ),
        "",
        (
            "What stays in PostgreSQL after the archive: the run carried"
            f" {first.carried_states:,} game states (the newest of every game),"
            f" {first.carried_positions} input position and {first.carried_prints:,}"
            " prints (those of the games not finished: the log stops in the middle of many;"
            " with the default 7 days,"
            f" {keep.carried_prints:,}: every event's) into the live partitions; the"
            f" partitions were archived as {first.files} files of"
            f" {first.segments} segments ({first.rows:,} rows)."
        ),
        "",
    ]
    if not rounds:  # --seasons-bytes-only
        return out
    out += [
        (
            "Throughput, rounds alternating (audit of the live copy, archive of a fresh copy,"
            " the ceiling read of its files, `audit --archive` of that copy and its archive),"
            " each the wall clock of the whole command, start-up included. Ceilings: for"
            " `referee archive`, reading every file it wrote from disk and decoding it to"
            " Python rows with the archive reader's own decoder (`parquet_to_rows`: pyarrow,"
            " then each column to Python values), in one process, nothing verified; for"
            " `referee audit --archive`, today's `referee audit` of the same data, all of it"
            " still in PostgreSQL."
        ),
        "",
        (
            "| round | `audit` (live): events/s | `archive`: rows/s (s) | ceiling, read the"
            " files: rows/s (s) | `audit --archive`: events/s | load average after the round |"
        ),
        "|---|---|---|---|---|---|",
    ]
    for i, x in enumerate(rounds, 1):
        out.append(
            f"| {i} | {x.audit_live.eps:,.0f} ({x.audit_live.seconds:.1f} s) |"
            f" {x.archive.rows_per_s:,.0f} ({x.archive.seconds:.1f} s) |"
            f" {x.ceiling.rows_per_s:,.0f} ({x.ceiling.seconds:.2f} s) |"
            f" {x.audit_archive.eps:,.0f} ({x.audit_archive.seconds:.1f} s) |"
            f" {x.audit_archive.load} |"
        )
    best = _best(rounds)
    archive, ceiling, audit, live = best.archive, best.ceiling, best.audit, best.live
    noop = r.noop_archive_seconds
    bare = r.empty_audit_seconds
    archive_net = archive.rows / (archive.seconds - noop)
    audit_net = events / (audit.seconds - bare)
    live_net = events / (live.seconds - bare)
    out += [
        "",
        (
            f"**`archive` / its ceiling = {archive.rows_per_s / ceiling.rows_per_s:.3f}**"
            f" (best of each; {archive_net:,.0f} rows/s = {archive_net / ceiling.rows_per_s:.3f}"
            f" without the {noop:.1f} s that a run with nothing to archive takes). **`audit"
            f" --archive` / `audit` = {audit.eps / live.eps:.2f}** (best of each;"
            f" {audit_net / live_net:.2f} without the {bare:.1f} s an audit of an empty store"
            " takes). Every `audit --archive` passed and read"
            f" {events:,} archived journal rows; every `audit` passed."
        ),
        "",
    ]
    if r.latency:
        out += latency_section(r.latency)
    if r.before_after:
        out += before_after_section(r.before_after)
    return out


def latency_section(lat: list[ArchivingLoad]) -> list[str]:
    """Section 10's latency table: ``serve`` at 1,000 events/s with and without an archive."""
    out = [
        "### 10b. `referee serve` at 1,000 events/s while `referee archive` runs",
        "",
        (
            "Each run on its own copy of the store above (every row of the mix's log in"
            " partitions that have ended), fresh topics: `referee serve`"
            " (`REFEREE_PARTITION_INTERVAL=1m`, batch 500) and the latency machinery of"
            " section 4 (paced production of fresh edition-1 games, each verdict timed from its"
            " cause's send to its read_committed arrival), a warm-up at 500 events/s, then"
            f" {lat[0].events:,} events at 1,000 events/s measured. With an archive,"
            " `referee archive --before NOW` starts as the measured phase does (and again, a"
            " second after it ends, until the phase is over): it writes, verifies, carries,"
            " detaches and drops every row of the log while `serve` judges into the newest"
            " partition; the window is longer than that run, so its detach is in it. Runs"
            " alternate: without, with, without, with."
        ),
        "",
        (
            "| run | archive | p50 ms | p99 ms | max ms | verdicts | archive running | rows"
            " archived | load average after |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for i, x in enumerate(lat, 1):
        running = f"{x.archive_overlap:.0%} of the window" if x.archiving else ""
        rows = f"{x.archived_rows:,}" if x.archiving else ""
        errors = [a.error for a in x.archive_runs if a.error is not None]
        if errors:
            rows += f" ({len(errors)} run(s) failed)"
        out.append(
            f"| {i} | {'yes' if x.archiving else 'no'} | {x.p50:.0f} | {x.p99:.0f} |"
            f" {x.max:.0f} | {x.verdicts:,} of {x.expected:,} | {running} | {rows} |"
            f" {x.load_average} |"
        )
    with_ = _p99s(lat, archiving=True)
    without = _p99s(lat, archiving=False)
    out += [
        "",
        (
            f"p99 with an archive {', '.join(f'{v:.0f}' for v in with_)} ms, without"
            f" {', '.join(f'{v:.0f}' for v in without)} ms: **median with / without ="
            f" {statistics.median(with_) / statistics.median(without):.2f}**; between runs of"
            f" the same kind the p99 moved by {max(with_) - min(with_):.0f} ms (with) and"
            f" {max(without) - min(without):.0f} ms (without)."
        ),
        "",
    ]
    return out


def before_after_section(ab: BeforeAfter) -> list[str]:
    """The store replay before and after migration 0010 (``--seasons-before``)."""
    out = [
        "### 10c. The store replay before and after migration 0010",
        "",
        (
            "`referee replay LOG --database URL --batch-size 2000 --output /dev/null` into a"
            " fresh database, the code of the commit before migration 0010 (`--seasons-before"
            " DIR`, an export of it: `git archive`) against this checkout's, both interpreted"
            " (PYTHONPATH),"
            " alternating (before, after, then after, before, ...); the command's own timer."
            " The default partition interval (a day): one partition a table holds the run."
        ),
        "",
        "| log | before 0010: events/s | after: events/s | after/before (medians) | load |",
        "|---|---|---|---|---|",
    ]
    for x, label in ((ab.edition1, "edition 1"), (ab.mix, "the mix")):
        b, a = x.runs["before"], x.runs["after"]
        out.append(
            f"| {label} ({x.events:,} events) | {', '.join(f'{v:,.0f}' for v in b)} |"
            f" {', '.join(f'{v:,.0f}' for v in a)} |"
            f" {statistics.median(a) / statistics.median(b):.2f} | {x.load} |"
        )
    return [*out, ""]


SECTION = Section(lambda results: typed(results, "seasons", Seasons), section, rows)
