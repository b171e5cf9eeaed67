"""The annotator screen's joined reads (annotation/joined.py), shared by the views and the engine:
an exposure with its rater and study (a submit's read, which also takes the rater's lock), the
same with the item, question and answers (the page), and the item side alone (the next item)."""

from __future__ import annotations

from django.db.models import Field

from annotation.joined import JoinedRead, Part
from annotation.models import Assignment, Item, Question, Rater, Response, Study

_EXPOSURE_PARTS = [
    Part("a", Assignment),
    Part("r", Rater, "a.rater"),
    Part("s", Study, "a.study"),
]
_ITEM_PARTS = [
    Part("q", Question, "i.question"),
    Part("ra", Response, "i.response_a"),
    Part("rb", Response, "i.response_b", outer=True),
]
_PUBLIC_ID: list[Field] = [Assignment._meta.get_field("public_id")]

# A submit's read, the first statement of its transaction: the exposure with its rater and
# study, and the rater's row lock that every service of the engine takes first (engine_base.
# lock_rater), in one round trip.
EXPOSURE_LOCKING_RATER = JoinedRead(_EXPOSURE_PARTS, "a.public_id = %s", _PUBLIC_ID, lock="r")
# Heartbeat and skip: the exposure with its rater and study.
EXPOSURE_LIGHT = JoinedRead(_EXPOSURE_PARTS, "a.public_id = %s", _PUBLIC_ID)
# The page: everything it shows, and the rater's submitted count in the study (its progress
# bar) as `rater_submitted` on the exposure.
EXPOSURE = JoinedRead(
    [*_EXPOSURE_PARTS, Part("i", Item, "a.item"), *_ITEM_PARTS],
    "a.public_id = %s",
    _PUBLIC_ID,
    extra={
        "rater_submitted": "(SELECT count(*) FROM annotation_assignment c "
        "WHERE c.rater_id = a.rater_id AND c.study_id = a.study_id "
        f"AND c.status = '{Assignment.Status.SUBMITTED.value}')"
    },
)
# The next item after a submit: the engine has just written (or resumed) the exposure for this
# rater in this study, so only the item's side is read. On PostgreSQL the pick's own statement
# returns these columns (engine_pick), and this read is left for the other cases.
ITEM = JoinedRead([Part("i", Item), *_ITEM_PARTS], "i.id = %s", [Item._meta.get_field("id")])


def item_is_loaded(a: Assignment) -> bool:
    """Whether the exposure carries its item with the question and answers (as ITEM reads it)."""
    if not Assignment.item.is_cached(a):
        return False
    item = a.item
    return Item.question.is_cached(item) and Item.response_a.is_cached(item)
