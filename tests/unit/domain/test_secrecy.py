"""Views that keep secrets: what a player, a spectator and the auditor may see of evidence."""

from __future__ import annotations

import pytest

from referee.domain.evidence import DrawFacts, Evidence, HandFacts, PlaceFacts, PlayableFacts
from referee.domain.explain import explain
from referee.domain.secrecy import AUDITOR, SPECTATOR, seen_by, viewer
from tests.notation import action, table

LINE = "ann: 3-4 5-5 1-6 | bob: 1-2 6-6 | cid: 0-0 2-4 | boneyard: 1-1 0-1 | left 3 right 6"


def evidence_of(line: str) -> Evidence:
    game = table(LINE)
    _, [found] = explain(game, action(game, line))
    return found


def test_the_auditor_sees_every_fact() -> None:
    found = evidence_of("ann passes")

    assert seen_by(found, AUDITOR, round_over=False) is found


@pytest.mark.parametrize("reader", ["bob", SPECTATOR])
def test_another_reader_sees_the_places_but_not_the_hand_of_a_false_pass(reader: str) -> None:
    found = evidence_of("ann passes")

    seen = seen_by(found, viewer(reader), round_over=False)

    assert seen.withheld == ("hand", "playable")
    assert isinstance(seen.facts, PlayableFacts)
    assert isinstance(found.facts, PlayableFacts)
    assert (seen.facts.hand, seen.facts.playable) == (None, None)
    assert seen.facts.places == found.facts.places
    assert seen.facts.hand_size == 3


def test_the_offender_sees_their_own_hand() -> None:
    found = evidence_of("ann passes")

    assert seen_by(found, viewer("ann"), round_over=False) is found


def test_nobody_but_the_auditor_learns_where_a_tile_is() -> None:
    found = evidence_of("ann plays 6-6 right")  # bob holds it

    own = seen_by(found, viewer("ann"), round_over=False)
    other = seen_by(found, viewer("cid"), round_over=False)

    assert own.facts == HandFacts((6, 6), ((1, 6), (3, 4), (5, 5)), None)
    assert own.withheld == ("where",)
    assert other.facts == HandFacts(None, None, None)
    assert other.withheld == ("tile", "hand", "where")


def test_a_tile_named_in_a_rejected_draw_or_play_is_the_actors_secret() -> None:
    drawn = seen_by(evidence_of("ann draws 6-6"), viewer("bob"), round_over=False)
    played = seen_by(evidence_of("ann plays 5-5 left"), viewer("bob"), round_over=False)

    assert isinstance(drawn.facts, DrawFacts)
    assert (drawn.facts.tile, drawn.facts.where) == (None, None)
    assert isinstance(played.facts, PlaceFacts)
    assert played.facts.tile is None
    assert played.facts.value == 3  # the value the place shows is on the table


def test_every_fact_is_revealed_once_the_round_is_over() -> None:
    found = evidence_of("ann passes")

    assert seen_by(found, viewer(SPECTATOR), round_over=True) is found


def test_spectator_names_the_spectators_view_even_if_a_player_is_called_so() -> None:
    assert viewer(SPECTATOR).player is None
    assert not viewer(SPECTATOR).sees_all
    assert viewer(None) == AUDITOR
    assert viewer("bob").name == "bob"
