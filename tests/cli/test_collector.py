"""The collector settings of the commands that run the processing step."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from referee.cli import collector


@pytest.fixture
def restored() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.set_threshold(*thresholds)
    gc.unfreeze()


@pytest.mark.usefixtures("restored")
def test_tune_raises_the_thresholds_and_freezes_what_exists() -> None:
    gc.unfreeze()
    before = gc.get_threshold()
    assert before != (collector.YOUNG, collector.MIDDLE, collector.OLD)
    survivor = [object()]
    collector.tune()
    assert gc.get_threshold() == (collector.YOUNG, collector.MIDDLE, collector.OLD)
    assert gc.get_freeze_count() > 0
    assert gc.is_tracked(survivor)
    # what was frozen is no longer in any generation the collector walks
    assert not any(o is survivor for o in gc.get_objects())
