"""PairChoice owns the A/B orientation of a pairwise answer (issue 12): what was clicked as shown
<-> the canonical choice, swapping, and A's score."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from annotation import engine
from annotation.importers.base import ImportRefused
from annotation.importers.bundle import canonical_choice
from annotation.models import PairChoice


@pytest.mark.parametrize(
    ("shown", "left_is_a", "canonical"),
    [
        ("left", True, "A"),
        ("left", False, "B"),
        ("right", True, "B"),
        ("right", False, "A"),
        ("tie", False, "tie"),
        ("both_bad", True, "both_bad"),
    ],
)
def test_a_shown_choice_round_trips_through_its_canonical_form(shown, left_is_a, canonical):
    choice = PairChoice.from_shown(shown, left_is_a=left_is_a)
    assert choice == canonical
    assert choice.shown(left_is_a=left_is_a) == shown
    assert engine.canonical_choice(shown, left_is_a=left_is_a) == canonical
    assert engine.display_choice(canonical, left_is_a=left_is_a) == shown


@pytest.mark.parametrize("bad", ["", "A", "LEFT", "left\x00", "٣", "x" * 10_000])
def test_anything_else_is_refused_clearly(bad):
    with pytest.raises(ValueError):
        PairChoice.from_shown(bad, left_is_a=True)
    with pytest.raises(ValidationError):
        engine.canonical_choice(bad, left_is_a=True)


def test_swapping_exchanges_a_and_b_and_leaves_draws_alone():
    assert PairChoice.A.swapped() == PairChoice.B
    assert PairChoice.B.swapped() == PairChoice.A
    assert PairChoice.TIE.swapped() == PairChoice.TIE
    assert PairChoice.BOTH_BAD.swapped() == PairChoice.BOTH_BAD
    for c in PairChoice:
        assert c.swapped().shown(left_is_a=False) == c.shown(left_is_a=True)
        assert c.score_a + c.swapped().score_a == 1.0


def test_scores_from_a_side():
    assert [PairChoice(c).score_a for c in ("A", "B", "tie", "both_bad")] == [1, 0, 0.5, 0.5]


def test_the_importers_orientation_uses_the_same_rule():
    assert canonical_choice("first", True, "line 1") == "A"
    assert canonical_choice("first", False, "line 1") == "B"
    assert canonical_choice("second", False, "line 1") == "A"
    assert canonical_choice("tie", False, "line 1") == "tie"
    assert canonical_choice("", True, "line 1") == ""
    with pytest.raises(ImportRefused):
        canonical_choice("left", True, "line 1")
