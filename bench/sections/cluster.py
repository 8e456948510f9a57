"""Section 9: one partition, one owner: four instances against one, and one of the four
killed (``bench.scenarios.cluster``)."""

from __future__ import annotations

import math
import statistics

import msgspec

from bench.sections.base import Page, Section, typed


class Slowest(msgspec.Struct, frozen=True):
    """One of the others' slowest 1% in the 10 s after the kill."""

    sent_after_kill_s: float


class Kill(msgspec.Struct, frozen=True):
    """One instance SIGKILLed: the others' p99 around it, the dead partitions' wait."""

    dead_partitions: list[int]
    others_before_p99: float
    others_first_p99: float
    """In the 10 s after the kill."""
    others_second_p99: float
    """In the 10 s after those."""
    dead_resumed_s: float
    dead_max_ms: float
    dead_drained_s: float = math.nan
    others_first_slowest: list[Slowest] = msgspec.field(default_factory=list)

    @property
    def rise(self) -> float:
        """Returns how much the others' p99 rose in the 10 s after the kill (ms)."""
        return self.others_first_p99 - self.others_before_p99


class Round(msgspec.Struct, frozen=True):
    """One layout's run: a warm-up, a steady phase, and with several instances, a kill."""

    instances: int
    partitions: int
    load: int
    achieved: float
    verdicts: int
    p50: float
    p99: float
    max: float
    heartbeat_ms: int = 250
    """The heartbeat interval it ran with (rounds before it was varied: 250 ms)."""
    kill: Kill | None = None


class Cluster(msgspec.Struct, frozen=True):
    """Every round, in the order run."""

    rounds: list[Round]


def _rises_by_heartbeat(rounds: list[Round]) -> dict[int, list[float]]:
    """The others' p99 rise after each kill (ms, in round order), by heartbeat interval,
    the longest interval first."""
    rises: dict[int, list[float]] = {}
    for x in sorted(rounds, key=lambda x: -x.heartbeat_ms):
        if x.kill is not None:
            rises.setdefault(x.heartbeat_ms, []).append(x.kill.rise)
    return rises


def rows(cl: Cluster) -> list[str]:
    """Its summary rows: four instances against one; the kill, per heartbeat interval."""
    one = [x.p99 for x in cl.rounds if x.instances == 1]
    many = [x for x in cl.rounds if x.instances > 1]
    if not one or not many:
        return []
    four = [x.p99 for x in many]
    met = max(four) <= max(one) and min(four) <= min(one)
    shown = ", ".join(f"{v:.0f}" for v in four)
    ones = ", ".join(f"{v:.0f}" for v in one)
    out = [
        (
            f"| 9. {many[0].instances} instances, {many[0].partitions} partitions,"
            f" {many[0].load:,}/s | p99 <= one instance's, <= 50 ms | p99 {shown} ms |"
            f" one: {ones} ms | {statistics.median(four) / statistics.median(one):.2f} |"
            f" {'**met**' if met else '**not met**'} |"
        )
    ]
    for heartbeat, extra in _rises_by_heartbeat(many).items():
        out.append(
            f"| 9. one of them killed (heartbeat {heartbeat} ms): the others' p99, 10 s after"
            " | <= steady + 100 ms |"
            f" {', '.join(f'{v:+.0f}' for v in extra)} ms | | |"
            f" {'**met**' if max(extra) <= 100 else '**not met**'} |"
        )
    return out


def _slowest_sent(kill: Kill) -> str:
    """When the others' slowest 1% after a kill were sent, in seconds after it."""
    if not kill.others_first_slowest:
        return "-"
    sent = [s.sent_after_kill_s for s in kill.others_first_slowest]
    return f"{min(sent):.1f}-{max(sent):.1f} s"


def section(cl: Cluster, page: Page) -> list[str]:  # noqa: ARG001 - every section's signature
    """Section 9: every round, then each kill."""
    rounds = cl.rounds
    out = [
        "## 9. One partition, one owner: four instances against one",
        "",
        (
            "Each layout on fresh topics (16 partitions each) and a fresh database, one group;"
            " a warm-up, then a steady phase at the same load in total, every verdict timed from"
            " its cause's production (`read_committed`). With four instances the run goes on:"
            " one instance is SIGKILLed and the load continues; the others' partitions give the"
            " p99 of the 10 s after the kill and of the 10 s after that, the dead instance's"
            " partitions how long they waited and when their backlog was drained (the last"
            " verdict of a record sent before they published again). Each round runs the four"
            " with two heartbeat intervals (`REFEREE_KAFKA_HEARTBEAT_INTERVAL_MS`), the one"
            " instance with the first; the survivors' `/metrics` stage timings are read every"
            " 0.25 s from 5 to 10 s after the kill (results.json, `survivor_stages`)."
        ),
        "",
        "| instances | heartbeat | load sent (events/s) | verdicts | p50 ms | p99 ms | max ms |",
        "|---|---|---|---|---|---|---|",
    ]
    out += [
        f"| {x.instances} | {x.heartbeat_ms} ms | {x.achieved:,.0f} | {x.verdicts:,} |"
        f" {x.p50:.0f} | {x.p99:.0f} | {x.max:.0f} |"
        for x in rounds
    ]
    killed = [(x, x.kill) for x in rounds if x.kill is not None]
    if killed:
        out += [
            "",
            (
                "| heartbeat | killed instance's partitions | others' p99 before |"
                " others' p99, 10 s after | 10-20 s after | others' slowest 1% sent |"
                " its partitions published again after | their backlog drained after |"
                " their longest wait |"
            ),
            "|---|---|---|---|---|---|---|---|---|",
        ]
        out += [
            f"| {x.heartbeat_ms} ms | {', '.join(map(str, k.dead_partitions))} |"
            f" {k.others_before_p99:.0f} ms | {k.others_first_p99:.0f} ms |"
            f" {k.others_second_p99:.0f} ms | {_slowest_sent(k)} |"
            f" {k.dead_resumed_s:.1f} s | {k.dead_drained_s:.1f} s |"
            f" {k.dead_max_ms / 1000:.1f} s |"
            for x, k in killed
        ]
        out += [
            "",
            (
                "The dead instance's partitions wait for the group to notice: the session"
                " timeout (`REFEREE_KAFKA_SESSION_TIMEOUT_MS`, 6 s in this run), then a"
                " rebalance (the sticky assignor of service/assignor.py: only the dead member's"
                " partitions move); their new owners fence the old transactional ids, read the"
                ' output partitions\' tails and publish (docs/design.md, "Failure stays local").'
                " The others' slowest 1% in the 10 s after the kill were sent at the rebalance"
                " or in the seconds after it (the column, in seconds after the kill): the eager"
                " rebalance stops every member's fetching from the heartbeat that tells it until"
                " the new assignment (a member learns at its next heartbeat), and then the"
                " survivors catch up the dead partitions' backlog on the same cores. Any delay"
                " of more than 1% of the window's verdicts shows in its p99."
            ),
        ]
    one = [x.p99 for x in rounds if x.instances == 1]
    four = [x.p99 for x in rounds if x.instances != 1]
    if one and four:
        by_heartbeat = _rises_by_heartbeat(rounds)
        after = "; the others' p99 in the 10 s after a kill rose by " + "; ".join(
            f"{', '.join(f'{r:+.0f}' for r in sorted(values))} ms (heartbeat {heartbeat} ms)"
            for heartbeat, values in by_heartbeat.items()
        )
        out += [
            "",
            f"Median p99: {statistics.median(four):.0f} ms with four instances,"
            f" {statistics.median(one):.0f} ms with one (ratio"
            f" {statistics.median(four) / statistics.median(one):.2f})"
            + (after + "." if by_heartbeat else "."),
        ]
    out.append("")
    return out


SECTION = Section(lambda results: typed(results, "cluster", Cluster), section, rows)
