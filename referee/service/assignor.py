"""The consumer group's assignor: balanced, and sticky (a rebalance moves only what it must).

aiokafka's group protocol is eager: every rebalance revokes every partition of every
member, and the leader then assigns them all again. Round robin deals them out afresh, so
an instance dying moves the partitions of the survivors too: each moved partition's new
owner reads its games from the store again and its publisher fences the old transactional
id and reads the output tails (docs/design.md, "Failure stays local"). This assignor keeps
every partition where it was when it can:

1. each member says in its join (``user_data``) the partitions it was last assigned;
2. each keeps those it alone claims, up to its share (``P // M`` partitions, one more for
   ``P % M`` of them, those keeping the most first);
3. the rest (a dead member's, a newcomer's share, a claim two members made) go, in partition
   order, to the members furthest below their share.

A member of an older release sends no claim (round robin's metadata): it keeps nothing and
gets its share of the rest. Whatever the claims, every partition is assigned exactly once
and the shares differ by at most one: the claims only decide which of the valid assignments
is chosen. Exactly-once does not rest on the assignor either way (the store's fence and the
publishers' transactional ids do: docs/design.md).

**The protocol keeps the name ``roundrobin``.** Every release so far offered round robin
alone, and aiokafka 0.14 sends one JoinGroup per assignor offered, the first naming only the
first protocol (``BaseCoordinator.perform_group_join`` sends inside its loop over the
assignors): offering a second protocol makes each member's second JoinGroup, with other
metadata, cut short the generation the first one formed, and two members joining together
did so to each other for ever (docs/reliability.md, "A first join that never completed"). With
one protocol under the old name, a group of old and new instances agrees on it during a
rolling upgrade; whichever member leads deals the partitions out its own way.

An instance of this class belongs to one consumer: it holds that consumer's last assignment
(aiokafka's own sticky assignor keeps it in the class, shared by every consumer of a
process).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping

from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

log = logging.getLogger("referee.serve")

PROTOCOL_NAME = "roundrobin"
"""The name every release's members offer (see the module's docstring)."""
CLAIM_VERSION = 1
"""The version of the claim carried in ``user_data``."""

Claims = Mapping[str, Mapping[str, Iterable[int]]]
"""Member id -> topic -> the partitions the member claims."""


class StickyAssignor:
    """A sticky, balanced partition assignor for one consumer (aiokafka's assignor API)."""

    name = PROTOCOL_NAME
    version = 0

    def __init__(self) -> None:
        self.owned: dict[str, list[int]] = {}
        """This consumer's last assignment: topic -> partitions."""

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        """The join's metadata: the topics, and the partitions this consumer last owned."""
        return ConsumerProtocolMemberMetadata(self.version, sorted(topics), encode(self.owned))

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        """Remembers this consumer's share, to claim it at the next join."""
        self.owned = {topic: sorted(partitions) for topic, partitions in assignment.assignment}

    def assign(
        self, cluster: ClusterMetadata, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, ConsumerProtocolMemberAssignment]:
        """The leader's assignment of every subscribed topic's partitions (the group's)."""
        subscribers: dict[str, list[str]] = {}
        for member_id, meta in members.items():
            for topic in meta.subscription:
                subscribers.setdefault(topic, []).append(member_id)
        claims = {member_id: decode(meta.user_data) for member_id, meta in members.items()}
        shares: dict[str, dict[str, list[int]]] = {member_id: {} for member_id in members}
        for topic, topic_members in sorted(subscribers.items()):
            partitions = cluster.partitions_for_topic(topic)
            if not partitions:
                log.warning("no partitions known for the subscribed topic %s", topic)
                continue
            topic_claims = {m: claims[m].get(topic, ()) for m in topic_members}
            for member_id, share in deal(sorted(partitions), topic_claims).items():
                if share:
                    shares[member_id][topic] = share
        return {
            member_id: ConsumerProtocolMemberAssignment(self.version, sorted(topics.items()), b"")
            for member_id, topics in shares.items()
        }


def deal(partitions: list[int], claims: Mapping[str, Iterable[int]]) -> dict[str, list[int]]:
    """Deals ``partitions`` out to the members of ``claims``: balanced (shares differ by at
    most one), each partition once, and each member keeping as much of its claim as that
    allows. Deterministic: the same partitions and claims give the same result."""
    members = sorted(claims)
    if not members:
        return {}
    exists = set(partitions)
    claimants: dict[int, list[str]] = {}
    for member_id in members:
        for partition in set(claims[member_id]):
            if partition in exists:
                claimants.setdefault(partition, []).append(member_id)
    kept: dict[str, list[int]] = {member_id: [] for member_id in members}
    for partition, by in sorted(claimants.items()):
        if len(by) == 1:  # a partition two members claim goes to neither by claim
            kept[by[0]].append(partition)
    low, extra = divmod(len(partitions), len(members))
    # those keeping the most get the larger shares: fewer partitions move
    ranked = sorted(members, key=lambda m: (-len(kept[m]), m))
    quota = {member_id: low + (1 if rank < extra else 0) for rank, member_id in enumerate(ranked)}
    dealt = {member_id: kept[member_id][: quota[member_id]] for member_id in members}
    taken = {p for share in dealt.values() for p in share}
    for partition in sorted(p for p in partitions if p not in taken):
        short = min(members, key=lambda m: (len(dealt[m]) - quota[m], m))
        dealt[short].append(partition)
    return {member_id: sorted(share) for member_id, share in dealt.items()}


def encode(owned: Mapping[str, Iterable[int]]) -> bytes:
    """The claim a member sends in its join: its last assignment."""
    body = {"v": CLAIM_VERSION, "owned": {t: sorted(p) for t, p in sorted(owned.items())}}
    return json.dumps(body, separators=(",", ":")).encode()


def decode(user_data: bytes | None) -> dict[str, list[int]]:
    """A member's claim; nothing for a member that sent none or one this release cannot
    read (an older release's round robin sends empty user data)."""
    if not user_data:
        return {}
    try:
        body = json.loads(user_data)
    except (ValueError, UnicodeDecodeError):
        return {}
    if not isinstance(body, dict) or body.get("v") != CLAIM_VERSION:
        return {}
    owned = body.get("owned")
    if not isinstance(owned, dict):
        return {}
    return {
        topic: [p for p in partitions if type(p) is int]
        for topic, partitions in owned.items()
        if isinstance(topic, str) and isinstance(partitions, list)
    }
