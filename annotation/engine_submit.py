"""Recording an answer: validating it, taking the item's place under N, writing the rating, and
editing a recent one. Hidden repeats and quality checks hold no place under N, so their
submits touch no item counter."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils.translation import gettext as _

from annotation import engine_sql, inputs
from annotation.engine_base import RECENT_EDITS, AssignmentGone
from annotation.models import (
    Assignment,
    Criterion,
    Item,
    PairChoice,
    Question,
    Rater,
    Rating,
    Rubric,
    Score,
)

_sql = engine_sql.sql
_db = engine_sql.db_value


# Criteria of built-in rubrics, per process: they are read-only (the admin refuses changes; only
# a release's seed rewrites them, before the servers restart), so the rubric's builtin flag is
# their version key. Criteria of organizers' rubrics can be edited, so they are read every time.
_BUILTIN_CRITERIA: dict[int, list[Criterion]] = {}


@receiver([post_save, post_delete], sender=Criterion)
@receiver([post_save, post_delete], sender=Rubric)
def _forget_criteria(**kwargs: object) -> None:
    # A seed run or a test database's flush (which re-creates the built-in rubrics) in this
    # process starts afresh.
    _BUILTIN_CRITERIA.clear()


def rubric_criteria(rubric_id: int) -> list[Criterion]:
    """A rubric's criteria in their order (from memory for a built-in rubric)."""
    cached = _BUILTIN_CRITERIA.get(rubric_id)
    if cached is not None:
        return cached
    rows = list(
        Criterion.objects.filter(rubric_id=rubric_id)
        .select_related("rubric")
        .order_by("order", "id")
    )
    if rows and rows[0].rubric.builtin:
        _BUILTIN_CRITERIA[rubric_id] = rows
    return rows


def criteria_for(rubric_id: int, question: Question) -> list[Criterion]:
    return [c for c in rubric_criteria(rubric_id) if c.applies(question)]


def _score_of(c: Criterion, raw: object) -> tuple[int | None, str | None]:
    """(value, None) or (None, the error to show) for one criterion's raw input."""
    label = c.label_en
    if raw in (None, ""):
        return None, _("Give a score for %(criterion)s.") % {"criterion": label}
    # Plain ASCII digits only: int() would take '٣' and '1_0' and fail on '²' (inputs.py).
    value = raw if type(raw) is int else inputs.small_int(raw)
    if value is None:
        return None, _("%(criterion)s: not a number.") % {"criterion": label}
    if not c.min_score <= value <= c.max_score:
        return None, _("%(criterion)s must be between %(lo)d and %(hi)d stars.") % {
            "criterion": label,
            "lo": c.min_score,
            "hi": c.max_score,
        }
    return value, None


def clean_scores(assignment: Assignment, scores: dict[str, object] | None) -> dict[Criterion, int]:
    if Assignment.item.is_cached(assignment):
        question = assignment.item.question
    else:
        question = Item.objects.select_related("question").get(pk=assignment.item_id).question
    criteria = criteria_for(assignment.study.rubric_id, question)
    scores = scores or {}
    errors: list[str] = []
    values: dict[Criterion, int] = {}
    for c in criteria:
        value, error = _score_of(c, scores.get(c.key))
        if error is not None:
            errors.append(error)
        elif value is not None:
            values[c] = value
    unknown = set(scores) - {c.key for c in criteria}
    if unknown:
        shown = [k[:40] for k in sorted(unknown)[:5]]
        errors.append(_("Unknown criteria: %(keys)s.") % {"keys": ", ".join(shown)})
    if errors:
        raise ValidationError(errors)
    return values


def canonical_choice(display_choice: str, *, left_is_a: bool) -> str:
    try:
        return PairChoice.from_shown(display_choice, left_is_a=left_is_a)
    except ValueError:
        raise ValidationError(
            _("Choose one of: left better, tie, both bad, right better.")
        ) from None


def display_choice(choice: str, *, left_is_a: bool) -> str:
    if choice in PairChoice.values:
        return PairChoice(choice).shown(left_is_a=left_is_a)
    return choice


def _is_recent(assignment: Assignment) -> bool:
    later = Assignment.objects.filter(
        study_id=assignment.study_id,
        rater_id=assignment.rater_id,
        status=Assignment.Status.SUBMITTED,
        seq__gt=assignment.seq,
    ).count()
    return later < RECENT_EDITS


# Lock the exposure and read its state fresh (a double click waits here for the first); whether
# its item is a quality check comes along without locking the item, and so do the rater's latest
# position in the study and how many they have submitted there (both index-only reads, stable
# under the rater's lock): the engine then needs neither the latest-exposure read nor the count
# for the quota and the progress bar (annotation/engine.py, Submitted).
_LOCK_EXPOSURE = (
    "SELECT x.status, x.item_id, x.is_repeat, x.left_is_a, x.seq, x.active_ms, "
    "(SELECT check_kind FROM annotation_item WHERE id = x.item_id), "
    "(SELECT max(seq) FROM annotation_assignment WHERE rater_id = x.rater_id "
    "AND study_id = x.study_id), "
    "(SELECT count(*) FROM annotation_assignment WHERE rater_id = x.rater_id "
    "AND study_id = x.study_id AND status = %s) "
    "FROM annotation_assignment x WHERE x.id = %s AND x.rater_id = %s"
)


class Submitted(NamedTuple):
    """What a submit leaves: the rating, whether it was a second submit (an edit, a double
    click), and, under the rater's lock, the rater's latest seq and submitted count in the study
    after this submit."""

    rating: Rating
    resubmitted: bool
    latest_seq: int
    done: int
    check_kind: str


def submit(
    *,
    assignment: Assignment,
    rater: Rater,
    scores: dict[str, object] | None,
    choice: str | None,
    active_ms: int | None,
    now: datetime,
) -> Submitted:
    """The rating and what the engine needs next (Submitted). The caller holds the rater's
    lock."""
    row = _sql(
        _LOCK_EXPOSURE + engine_sql.for_update(),
        [Assignment.Status.SUBMITTED, assignment.pk, rater.pk],
    )
    if not row:
        raise Assignment.DoesNotExist
    a = assignment
    a.status, a.item_id, a.is_repeat, a.left_is_a, a.seq, a.active_ms, check_kind = row[0][:7]
    latest_seq, done = int(row[0][7]), int(row[0][8])
    canonical, values = "", {}
    if a.study.mode == Rubric.Mode.PAIRWISE:
        canonical = canonical_choice(choice or "", left_is_a=a.left_is_a)
    else:
        values = clean_scores(a, scores)
    if active_ms is not None:
        active_ms = max(0, min(int(active_ms), 24 * 3600 * 1000))

    if a.status == Assignment.Status.SUBMITTED:
        rating = _edit(a, canonical=canonical, values=values, active_ms=active_ms, now=now)
        return Submitted(rating, True, latest_seq, done, check_kind or "")
    if a.status == Assignment.Status.SKIPPED:
        raise AssignmentGone("skipped")
    # A regular item's place under N: a live reservation turns into a rating (written with the
    # rating below), a lapsed one takes a place if the item still has room.
    holds_place = not a.is_repeat and not check_kind
    if holds_place and a.status != Assignment.Status.SERVED:
        _take_lapsed_place(a)
    rating = _rating_create(
        a, rater, canonical=canonical, values=values, active_ms=active_ms, now=now,
        reserved=holds_place and a.status == Assignment.Status.SERVED,
    )  # fmt: skip
    return Submitted(rating, False, latest_seq, done + 1, check_kind or "")


_RESERVATION_TO_RATING = (
    "UPDATE annotation_item SET n_reserved = n_reserved - 1, n_ratings = n_ratings + 1 "
    "WHERE id = %s"
)
_SUBMITTED = (
    "UPDATE annotation_assignment SET status = %s, submitted_at = %s, active_ms = %s WHERE id = %s"
)
_RATING_INSERT = (
    "INSERT INTO annotation_rating (assignment_id, item_id, rater_id, choice, comment, "
    "created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id"
)


def _take_lapsed_place(a: Assignment) -> None:
    """An expired exposure takes a place under N if its item still has room for it."""
    taken = _sql(
        "UPDATE annotation_item SET n_ratings = n_ratings + 1 "
        "WHERE id = %s AND n_ratings + n_reserved < %s RETURNING id",
        [a.item_id, a.study.ratings_per_item],
    )
    if not taken:
        raise AssignmentGone("expired")


def _rating_create(
    a: Assignment,
    rater: Rater,
    *,
    canonical: str,
    values: dict[Criterion, int],
    active_ms: int | None,
    now: datetime,
    reserved: bool,
) -> Rating:
    """Mark the exposure submitted and write its rating and scores (plain SQL, hot path);
    reserved: the exposure's reservation becomes a rating of the item in the same write."""
    a.status = Assignment.Status.SUBMITTED
    a.submitted_at = now
    a.active_ms = active_ms
    rating = Rating(
        assignment=a,
        item_id=a.item_id,
        rater=rater,
        choice=canonical,
        comment="",
        created_at=now,
        updated_at=now,
    )
    item = [a.item_id] if reserved else []
    submitted = [a.status, _db(Assignment, "submitted_at", now), active_ms, a.pk]
    insert = [a.pk, a.item_id, rater.pk, canonical, "", _db(Rating, "created_at", now),
              _db(Rating, "updated_at", now)]  # fmt: skip
    if connection.vendor == "postgresql":
        # One round trip: PostgreSQL runs the updates as parts of the insert (writable CTEs).
        ctes = ([f"i AS ({_RESERVATION_TO_RATING})"] if reserved else []) + [f"x AS ({_SUBMITTED})"]
        statement = f"WITH {', '.join(ctes)} {_RATING_INSERT}"
        rating.pk = _sql(statement, [*item, *submitted, *insert])[0][0]
    else:
        if reserved:
            _sql(_RESERVATION_TO_RATING, item)
        _sql(_SUBMITTED, submitted)
        rating.pk = _sql(_RATING_INSERT, insert)[0][0]
    rating._state.adding = False
    rating._state.db = connection.alias
    if values:
        Score.objects.bulk_create(
            [Score(rating=rating, criterion=c, value=v) for c, v in values.items()]
        )
    return rating


def is_repeated(assignment: Assignment) -> bool:
    """Whether a hidden repeat of this exposure has been served. Its rater then neither sees nor
    changes it (its page, Previous, an edit): its answer beside the repeat would give the repeat
    away, and an edit after the repeat would make the two agree by hand."""
    return Assignment.objects.filter(repeat_of_id=assignment.pk).exists()


def can_change(assignment: Assignment) -> bool:
    """Whether the rater may still open and change this submitted exposure: it is among their
    RECENT_EDITS latest submissions in the study and was never repeated. Its page and Previous
    show it only then, so that no page of an earlier rating reads differently once a hidden
    repeat of it is served (repeats are drawn only from ratings past this window)."""
    return _is_recent(assignment) and not is_repeated(assignment)


def _edit(
    a: Assignment,
    *,
    canonical: str,
    values: dict[Criterion, int],
    active_ms: int | None,
    now: datetime,
) -> Rating:
    """A second submit of a submitted assignment changes its one rating; counters stay put."""
    if not _is_recent(a):
        raise ValidationError(_("This rating is too old to change."))
    if is_repeated(a):
        raise ValidationError(_("This rating can no longer be changed."))
    rating = Rating.objects.get(assignment=a)
    rating.choice = canonical
    rating.updated_at = now
    rating.save(update_fields=["choice", "updated_at"])
    for criterion, value in values.items():
        Score.objects.update_or_create(
            rating=rating, criterion=criterion, defaults={"value": value}
        )
    if active_ms:
        Assignment.objects.filter(pk=a.pk).update(active_ms=(a.active_ms or 0) + active_ms)
    return rating
