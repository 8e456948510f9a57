"""The group's assignor (referee/service/assignor.py): every partition exactly once, shares
balanced, and as little moved as that allows."""

from __future__ import annotations

from typing import cast

from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from hypothesis import given
from hypothesis import strategies as st

from referee.service.assignor import StickyAssignor, deal, decode, encode

TOPIC = "domino.game-events"


class Cluster:
    """The one thing an assignor asks of the cluster's metadata."""

    def __init__(self, partitions: dict[str, int]) -> None:
        self.partitions = partitions

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        count = self.partitions.get(topic)
        return None if count is None else set(range(count))


def cluster(**partitions: int) -> ClusterMetadata:
    return cast(ClusterMetadata, Cluster(partitions if partitions else {TOPIC: 16}))


def check_valid(partitions: list[int], dealt: dict[str, list[int]]) -> None:
    flat = sorted(p for share in dealt.values() for p in share)
    assert flat == sorted(partitions), "every partition exactly once"
    sizes = [len(share) for share in dealt.values()]
    assert max(sizes) - min(sizes) <= 1, f"balanced: {sizes}"


def test_a_new_group_is_dealt_evenly() -> None:
    dealt = deal(list(range(16)), {"a": [], "b": [], "c": []})
    check_valid(list(range(16)), dealt)
    assert sorted(len(s) for s in dealt.values()) == [5, 5, 6]


def test_when_a_member_dies_only_its_partitions_move() -> None:
    before = deal(list(range(16)), {m: [] for m in "abcd"})
    after = deal(list(range(16)), {m: before[m] for m in "abc"})
    check_valid(list(range(16)), after)
    for m in "abc":
        assert set(before[m]) <= set(after[m]), f"{m} kept what it had"
    assert set(before["d"]) == {p for m in "abc" for p in after[m]} - {
        p for m in "abc" for p in before[m]
    }


def test_a_newcomer_takes_only_its_share_and_nobody_else_loses_more_than_that() -> None:
    before = deal(list(range(16)), {m: [] for m in "abc"})
    after = deal(list(range(16)), {**before, "d": []})
    check_valid(list(range(16)), after)
    assert len(after["d"]) == 4
    moved = sum(len(set(before[m]) - set(after[m])) for m in "abc")
    assert moved == 4


def test_a_partition_two_members_claim_goes_to_neither_by_claim_and_is_still_dealt() -> None:
    dealt = deal([0, 1, 2, 3], {"a": [0, 1], "b": [1, 2]})
    check_valid([0, 1, 2, 3], dealt)
    assert 0 in dealt["a"]
    assert 2 in dealt["b"]


def test_claims_of_partitions_that_do_not_exist_are_ignored() -> None:
    dealt = deal([0, 1], {"a": [0, 7, -1], "b": [1, 9]})
    assert dealt == {"a": [0], "b": [1]}


def test_a_member_over_its_share_gives_up_its_highest_partitions() -> None:
    dealt = deal(list(range(6)), {"a": [0, 1, 2, 3, 4, 5], "b": []})
    assert dealt == {"a": [0, 1, 2], "b": [3, 4, 5]}


@given(
    st.integers(min_value=1, max_value=40),
    st.lists(
        st.lists(st.integers(min_value=-2, max_value=45), max_size=12),
        min_size=1,
        max_size=9,
    ),
)
def test_any_claims_give_a_valid_balanced_assignment_that_keeps_all_it_can(
    count: int, claims_by_member: list[list[int]]
) -> None:
    partitions = list(range(count))
    claims = {f"m{i}": claim for i, claim in enumerate(claims_by_member)}
    dealt = deal(partitions, claims)
    check_valid(partitions, dealt)
    assert dealt == deal(partitions, dict(reversed(claims.items()))), "deterministic"
    # a partition claimed by one member alone stays with it unless that member is over the
    # larger share
    high = -(-count // len(claims))
    for member, claim in claims.items():
        sole = {
            p
            for p in set(claim)
            if 0 <= p < count and all(p not in c for m, c in claims.items() if m != member)
        }
        if len(sole) <= count // len(claims):
            assert sole <= set(dealt[member]), f"{member} kept its own claim"
        assert len(set(dealt[member]) & sole) >= min(len(sole), count // len(claims))
        assert len(dealt[member]) <= high


def test_a_claim_survives_its_encoding_and_unreadable_claims_are_none() -> None:
    assert decode(encode({TOPIC: [3, 1]})) == {TOPIC: [1, 3]}
    for junk in (None, b"", b"\x00\xff", b"[]", b'{"v":2,"owned":{}}', b'{"v":1,"owned":[1]}'):
        assert decode(junk) == {}
    assert decode(b'{"v":1,"owned":{"t":[1,"2",true,3]}}') == {"t": [1, 3]}


def test_the_assignor_claims_what_its_consumer_was_last_given() -> None:
    assignor = StickyAssignor()
    assert decode(assignor.metadata([TOPIC]).user_data) == {}
    assignor.on_assignment(ConsumerProtocolMemberAssignment(0, [(TOPIC, [5, 2])], b""))
    meta = assignor.metadata([TOPIC])
    assert meta.subscription == [TOPIC]
    assert decode(meta.user_data) == {TOPIC: [2, 5]}
    assert StickyAssignor().owned == {}, "a consumer's claim is its own, not the class's"


def test_the_leader_keeps_members_where_they_were_and_deals_to_old_releases_too() -> None:
    """A member of an older release sends round robin's metadata (no claim): it is dealt
    its share of what nobody keeps."""
    leader = StickyAssignor()
    old = RoundRobinPartitionAssignor.metadata([TOPIC])
    members = {
        "a": ConsumerProtocolMemberMetadata(0, [TOPIC], encode({TOPIC: [0, 1, 2, 3, 4, 5]})),
        "b": ConsumerProtocolMemberMetadata(0, [TOPIC], encode({TOPIC: [6, 7, 8, 9, 10]})),
        "old": old,
    }
    result = leader.assign(cluster(), members)
    shares = {m: dict(a.assignment).get(TOPIC, []) for m, a in result.items()}
    check_valid(list(range(16)), shares)
    assert shares["a"] == [0, 1, 2, 3, 4, 5]
    assert shares["b"] == [6, 7, 8, 9, 10]
    assert shares["old"] == [11, 12, 13, 14, 15]
    encoded = result["old"].encode()
    assert ConsumerProtocolMemberAssignment.decode(encoded).partitions() == [
        (TOPIC, p) for p in range(11, 16)
    ]


def test_members_subscribed_to_other_topics_are_dealt_only_those() -> None:
    leader = StickyAssignor()
    members = {
        "a": ConsumerProtocolMemberMetadata(0, ["x"], b""),
        "b": ConsumerProtocolMemberMetadata(0, ["x", "y"], b""),
        "c": ConsumerProtocolMemberMetadata(0, ["missing"], b""),
    }
    result = leader.assign(cluster(x=4, y=2), members)
    shares = {m: dict(a.assignment) for m, a in result.items()}
    assert sorted(shares["a"]["x"] + shares["b"]["x"]) == [0, 1, 2, 3]
    assert shares["b"]["y"] == [0, 1]
    assert shares["c"] == {}
