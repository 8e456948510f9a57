"""The peer checks' own machinery: a missing peer library, and the move probe's two ways."""

from __future__ import annotations

import pytest

from tests.peer.peer_support import (
    Emitter,
    PeerGame,
    moves_on_line,
    probe_moves,
    require_peer,
)


def test_a_missing_peer_library_skips_on_a_developer_machine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no_such_peer_library"):
        require_peer("no_such_peer_library")


def test_a_missing_peer_library_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set"):
        require_peer("no_such_peer_library")


def test_an_installed_library_is_returned() -> None:
    assert require_peer("json").dumps([1]) == "[1]"


def test_a_value_shown_by_both_ends_is_either_end() -> None:
    offers = [((3, 5), 3), ((1, 3), 3), ((2, 6), 6)]
    assert moves_on_line(offers, 3, 3) == {
        ((3, 5), "left"),
        ((3, 5), "right"),
        ((1, 3), "left"),
        ((1, 3), "right"),
    }
    assert moves_on_line(offers, 3, 6) == {((3, 5), "left"), ((1, 3), "left"), ((2, 6), "right")}


def _two_player_game(legal_second: frozenset[tuple[tuple[int, int], str | None]]) -> PeerGame:
    """ann leads [1,2]; bob holds [2,3] and [4,4]: only [2,3] on the right plays."""
    em = Emitter("probe-1", 0)
    em.emit("GameStarted", players=["ann", "bob"], rules={"draw": "none"})
    em.emit(
        "RoundStarted",
        round=1,
        hands={"ann": [[1, 2], [5, 5]], "bob": [[2, 3], [4, 4]]},
        boneyard=[],
        leader="ann",
    )
    first = em.emit("TilePlayed", round=1, player="ann", tile=[1, 2])
    second = em.emit("TilePlayed", round=1, player="bob", tile=[2, 3], end="right")
    legal = {first: frozenset({((1, 2), None), ((5, 5), None)}), second: legal_second}
    return PeerGame("probe-1", em.events, {}, [], legal)


def test_the_probe_agrees_when_the_peer_allows_exactly_the_legal_plays() -> None:
    assert probe_moves(_two_player_game(frozenset({((2, 3), "right")}))) == []


def test_the_probe_reports_a_move_only_the_peer_allows() -> None:
    legal = frozenset({((2, 3), "right"), ((4, 4), "left")})
    (problem,) = probe_moves(_two_player_game(legal))
    assert "peer-only moves [((4, 4), 'left')], referee-only moves []" in problem


def test_the_probe_reports_a_position_where_only_the_referee_sees_a_play() -> None:
    # The peer would skip bob: the referee accepts [2,3] on the right and calls a pass false.
    moves, passing = probe_moves(_two_player_game(frozenset()))
    assert "peer-only moves [], referee-only moves [((2, 3), 'right')]" in moves
    assert "a pass gives fouls ['false_pass'], expected []" in passing
