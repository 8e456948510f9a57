"""``referee audit --topics``: the store's outbox rows against the output topics' records."""

from __future__ import annotations

from referee.usecases.topics_audit import (
    PublishedRecord,
    StoredRow,
    TopicsReport,
    compare_outbox,
)


def rows(partition: int, *bodies: str, withheld: tuple[str, ...] = ()) -> list[StoredRow]:
    return [
        StoredRow(partition, n + 1, b.encode(), withheld=b in withheld)
        for n, b in enumerate(bodies)
    ]


def records(partition: int, *values: str) -> list[PublishedRecord]:
    return [PublishedRecord(partition, n * 2, v.encode()) for n, v in enumerate(values)]


def compared(stored: list[StoredRow], published: list[PublishedRecord]) -> TopicsReport:
    report = TopicsReport()
    compare_outbox("verdicts", stored, published, report)
    return report


def test_given_the_topic_holds_a_prefix_of_the_store_then_they_agree_with_a_backlog() -> None:
    report = compared(rows(0, "a", "b", "c") + rows(1, "x"), records(0, "a", "b"))
    assert report.passed
    assert report.unpublished == {"verdicts": 2}


def test_given_the_topic_holds_what_the_store_lost_then_it_is_a_difference() -> None:
    report = compared(rows(0, "a", "b"), records(0, "a", "b", "c", "d"))
    assert not report.passed
    assert "offset 4 is not in the store (the store lost commits" in report.differences[0]


def test_given_a_record_twice_on_the_topic_then_it_is_a_difference() -> None:
    report = compared(rows(0, "a", "b"), records(0, "a", "b", "b"))
    assert [d for d in report.differences if "2 times" in d]


def test_given_a_gap_on_the_topic_then_it_is_a_difference_but_a_withheld_row_is_not() -> None:
    assert not compared(rows(0, "a", "b", "c"), records(0, "a", "c")).passed
    withheld = compared(rows(0, "a", "b", "c", withheld=("b",)), records(0, "a", "c"))
    assert withheld.passed
    assert withheld.withheld == {"verdicts": 1}


def test_given_the_topics_order_is_not_the_stores_then_it_is_a_difference() -> None:
    report = compared(rows(0, "a", "b", "c"), records(0, "b", "a", "c"))
    assert "not in the store's order" in report.differences[0]


def test_partitions_are_compared_each_with_its_own() -> None:
    report = compared(rows(0, "a") + rows(1, "b"), records(1, "a"))
    assert not report.passed, "a record of partition 0's outbox on partition 1"
