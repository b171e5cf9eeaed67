"""The assignment engine: what an annotator is served next, and what happens when they submit,
skip or go back.

Guarantees (see docs/decisions/annotation.md):
- Exactly N: for every item, n_ratings + n_reserved <= study.ratings_per_item at all times. Both
  counters only change in single UPDATE statements on a row this transaction holds (or takes) the
  lock of; on PostgreSQL the pick uses SELECT ... FOR UPDATE SKIP LOCKED so hundreds of annotators
  never wait on one another's candidate rows. SQLite serialises writers, which is correct for the
  demo's one user at a time.
- Blind and random: among items this rater was never exposed to, the lowest load level first
  (ratings + live reservations), a random item within it; sides and hints random per exposure.
- Adaptive studies (study.assignment_mode): the highest Item.priority first, kept by
  study_priorities_refresh away from the request path (annotation/engine_adaptive.py).
- Hidden repeats and quality checks: about study.repeat_rate and study.check_rate of what a rater
  is served, never two hidden exposures in a row; they reserve nothing and never count toward N
  (annotation/engine_hidden.py).
- Lock order is always rater -> assignment -> item, so the services cannot deadlock each other.

Modules: engine (these services), engine_base (errors, locks, the exposure insert), engine_pick
(reservation), engine_hidden (repeats, checks), engine_submit (answers), engine_adaptive
(priorities), engine_sql (plain SQL helpers).
"""

from __future__ import annotations

import random
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from django.db import transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from annotation import engine_sql, leases
from annotation.engine_base import (
    RECENT_EDITS,
    REPEAT_GAP,
    AssignmentGone,
    NotAdmitted,
    Slot,
    StudyUnavailable,
    check_admission,
    exposure_new,
    hint_for,
    lock_rater,
    rng_default,
)
from annotation.engine_hidden import hidden_exposure
from annotation.engine_pick import assignments_expire, reserve_exposure
from annotation.engine_submit import (
    Submitted,
    can_change,
    canonical_choice,
    criteria_for,
    display_choice,
    is_repeated,
    submit,
)
from annotation.models import Assignment, Item, Rater, Rating, Rubric, Study
from annotation.progress import (
    RaterProgress,
    rater_progress,
    rater_submitted_count,
    study_progress,
)
from config.lazy import lazy_module

if TYPE_CHECKING:
    from annotation import engine_adaptive
else:
    engine_adaptive = lazy_module("annotation.engine_adaptive")

# The public names, for the pages, the API, commands and tests.
__all__ = [
    "DISPLAY_CHOICES",
    "RECENT_EDITS",
    "REPEAT_GAP",
    "AssignmentGone",
    "NotAdmitted",
    "RaterProgress",
    "StudyUnavailable",
    "SubmitResult",
    "assignment_next",
    "assignment_previous",
    "assignment_skip",
    "assignment_submit",
    "assignment_submit_and_next",
    "assignments_expire",
    "canonical_choice",
    "check_admission",
    "criteria_for",
    "display_choice",
    "can_change",
    "is_repeated",
    "rater_progress",
    "rater_submitted_count",
    "study_progress",
]

# What the annotator clicks (sides as shown) -> the canonical choice, given left_is_a.
DISPLAY_CHOICES = ("left", "tie", "both_bad", "right")

# The latest exposure of a rater in a study, locked; whether its item is a quality check comes
# along without locking the item.
_LAST_EXPOSURE = (
    "SELECT id, seq, status, is_repeat, item_id, "
    "(SELECT check_kind FROM annotation_item WHERE id = item_id) FROM annotation_assignment "
    "WHERE study_id = %s AND rater_id = %s ORDER BY seq DESC LIMIT 1"
)


@transaction.atomic
def assignment_next(
    *,
    study: Study,
    rater: Rater,
    now: datetime | None = None,
    rng: random.Random | None = None,
    client_tag: str = "",
) -> Assignment | None:
    """The rater's open assignment if they have one, else a new exposure: a hidden repeat or
    quality check (about study.repeat_rate and study.check_rate of the time) or a freshly
    reserved item. None when there is nothing left for this rater (quota reached or every item
    has its N ratings or was seen by them).

    client_tag (leases.client_tag of the request's address) caps open reservations per address
    for crowd and public raters: leases.AddressBusy when that address holds its share."""
    return _next(
        study=study,
        rater=rater,
        now=now or timezone.now(),
        rng=rng or rng_default,
        client_tag=client_tag,
    )


def _next(
    *,
    study: Study,
    rater: Rater,
    now: datetime,
    rng: random.Random,
    rater_locked: bool = False,
    client_tag: str = "",
    resubmitted_seq: int | None = None,
    known: tuple[tuple[Any, ...] | None, int] | None = None,
) -> Assignment | None:
    """known: (the latest exposure's row as _LAST_EXPOSURE reads it, or None to read it; the
    rater's submitted count), when a submit under the same rater lock has read them already."""
    check_admission(study=study, rater=rater)
    if not rater_locked:
        lock_rater(rater)

    # Only the latest exposure can be open: next always resumes an open one before creating.
    last = known[0] if known is not None else None
    if last is None:
        rows = engine_sql.sql(_LAST_EXPOSURE + engine_sql.for_update(), [study.pk, rater.pk])
        last = rows[0] if rows else (None, 0, None, False, None, "")
    last_pk, last_seq, last_status, last_is_repeat, last_item, last_check = last
    if last_pk is not None:
        resumed = _resume(
            study=study, now=now, pk=last_pk, status=last_status, item_id=last_item,
            holds_place=not last_is_repeat and not last_check,
        )  # fmt: skip
        if resumed is not None:
            return resumed
    if resubmitted_seq is not None and resubmitted_seq == last_seq:
        # A second submit of the rater's latest exposure (a double click, a retry, an edit from
        # the end page): its first submit found nothing to serve, so this one answers the same.
        return None

    quota = study.quota_for(rater.pool)
    done = known[1] if known is not None else None
    if done is None and quota is not None:
        done = rater_submitted_count(study=study, rater=rater)
    if quota is not None and done is not None and done >= quota:
        return None
    leases.check_address(study=study, rater=rater, tag=client_tag, now=now)
    slot = Slot(
        study=study,
        rater=rater,
        seq=last_seq + 1,
        served_at=now,
        expires_at=leases.now_plus(study, now),
        client_tag=client_tag if rater.pool in leases.CAPPED_POOLS else "",
    )
    return _new_exposure(slot, last_hidden=bool(last_is_repeat or last_check), rng=rng)


def _new_exposure(slot: Slot, *, last_hidden: bool, rng: random.Random) -> Assignment | None:
    """A hidden repeat or check (at the study's rates) or a freshly reserved item; None if
    nothing is left."""
    hidden, exposure = hidden_exposure(slot, last_hidden=last_hidden, rng=rng)
    if hidden:
        return exposure
    study = slot.study
    # Sides and hint are drawn first: on PostgreSQL the pick's statement writes the exposure.
    a = exposure_new(
        slot,
        item_id=None,
        left_is_a=rng.random() < 0.5 if study.mode == Rubric.Mode.PAIRWISE else True,
        hint_shown=hint_for(study, rng),
    )
    return reserve_exposure(a, now=slot.served_at, rng=rng)


def _resume(
    *, study: Study, now: datetime, pk: int, status: str, item_id: int, holds_place: bool
) -> Assignment | None:
    """The open item is never lost: a live lease is resumed and renewed, a lapsed one taken back
    while its item still has room (e.g. after a long detour through Previous). One held for
    ANNOTATION_MAX_HOLD is let go instead (leases.release), and the rater gets another item."""
    if status not in (Assignment.Status.SERVED, Assignment.Status.EXPIRED):
        return None
    resumed = Assignment.objects.get(pk=pk)
    if leases.held_too_long(resumed.served_at, now):
        if status == Assignment.Status.SERVED:
            leases.release(assignment=resumed, holds_place=holds_place, now=now)
        return None
    if status == Assignment.Status.EXPIRED and not leases.retake(
        study=study, assignment_id=pk, item_id=item_id, is_repeat=not holds_place, now=now
    ):
        return None
    resumed.status, resumed.expired_at = Assignment.Status.SERVED, None
    resumed.expires_at = leases.now_plus(study, now)
    if status == Assignment.Status.SERVED:
        resumed.save(update_fields=["expires_at"])
    return resumed


class SubmitResult(tuple[Rating, Assignment | None]):
    """(rating, following), plus done: how many the rater has submitted in the study now (the
    progress figure, counted under the rater's lock, so the page needs no count of its own)."""

    done: int

    def __new__(cls, rating: Rating, following: Assignment | None, done: int) -> SubmitResult:
        result = super().__new__(cls, (rating, following))
        result.done = done
        return result


class Answer(TypedDict, total=False):
    """What an annotator sends: scores (criterion key -> stars) for a star item, choice (left,
    right, tie, both_bad as shown) for a pair, and the active time on the item."""

    scores: dict[str, object] | None
    choice: str | None
    active_ms: int | None


def _submit_locked(
    assignment: Assignment, rater: Rater, now: datetime, answer: Answer, *, locked: bool = False
) -> Submitted:
    """Take the rater's lock (unless the caller holds it already) and record the answer."""
    if not locked:
        lock_rater(rater)
    done = submit(
        assignment=assignment,
        rater=rater,
        now=now,
        scores=answer.get("scores"),
        choice=answer.get("choice"),
        active_ms=answer.get("active_ms"),
    )
    if not done.resubmitted:
        engine_adaptive.note_submit(assignment.study)
    return done


@transaction.atomic
def assignment_submit(
    *, assignment: Assignment, rater: Rater, now: datetime | None = None, **answer: Unpack[Answer]
) -> Rating:
    """Record (or, for a recent submitted assignment, update) the rater's answer.

    scores: criterion key -> stars (star studies); choice: left / right / tie / both_bad as shown
    (pairwise), stored canonically. Submitting the same assignment twice leaves one rating.
    """
    return _submit_locked(assignment, rater, now or timezone.now(), answer).rating


def assignment_submit_and_next(
    *,
    assignment: Assignment,
    rater: Rater,
    now: datetime | None = None,
    rng: random.Random | None = None,
    client_tag: str = "",
    rater_locked: bool = False,
    **answer: Unpack[Answer],
) -> SubmitResult:
    """Submit and reserve what comes next in one transaction (one commit per item). Raises as
    assignment_submit does, before anything is written; a study that stopped running or stopped
    admitting this rater's pool takes no more ratings (StudyUnavailable / NotAdmitted).

    Submitting an assignment again (a double click, or an edit through Previous) changes the
    rating, counts nothing twice and answers with the rater's open item; when the assignment was
    their latest exposure, with what its first submit answered (see _next).

    rater_locked: the caller has opened the transaction and taken the rater's lock as its first
    statement (the item screen's submit reads the exposure that way: exposure_reads); the
    service then runs in that transaction without a savepoint of its own (an error rolls all of
    it back) and without a second lock statement."""
    if rater_locked and not transaction.get_connection().in_atomic_block:
        raise transaction.TransactionManagementError("rater_locked needs the caller's transaction")
    with transaction.atomic(savepoint=not rater_locked):
        return _submit_and_next(assignment, rater, now, rng, client_tag, rater_locked, answer)


def _submit_and_next(
    assignment: Assignment,
    rater: Rater,
    now: datetime | None,
    rng: random.Random | None,
    client_tag: str,
    locked: bool,
    answer: Answer,
) -> SubmitResult:
    now = now or timezone.now()
    check_admission(study=assignment.study, rater=rater)
    done = _submit_locked(assignment, rater, now, answer, locked=locked)
    a = assignment
    # The submitted exposure is the rater's latest (the usual case): _next knows it already.
    last = None
    if done.latest_seq == a.seq:
        last = (a.pk, a.seq, a.status, a.is_repeat, a.item_id, done.check_kind)
    following = _next(
        study=a.study,
        rater=rater,
        now=now,
        rng=rng or rng_default,
        rater_locked=True,
        client_tag=client_tag,
        resubmitted_seq=a.seq if done.resubmitted else None,
        known=(last, done.done),
    )
    return SubmitResult(done.rating, following, done.done)


@transaction.atomic
def assignment_skip(*, assignment: Assignment, rater: Rater, now: datetime | None = None) -> None:
    """Give the item back to others; this rater is never served it again (the exposure stays).
    A study that is not live (paused, closed) or no longer admits the rater's pool refuses it
    (StudyUnavailable / NotAdmitted) and nothing changes."""
    now = now or timezone.now()
    check_admission(study=assignment.study, rater=rater)
    lock_rater(rater)
    a = engine_sql.lock(Assignment.objects.filter(pk=assignment.pk, rater=rater)).first()
    if a is None:
        raise Assignment.DoesNotExist
    if a.status not in (Assignment.Status.SERVED, Assignment.Status.EXPIRED):
        return  # already skipped (a retry) or submitted (skipping an edit just moves on)
    if a.status == Assignment.Status.SERVED and not a.is_repeat:
        # Quality checks hold no place either: only a regular item gets its place back.
        Item.objects.filter(pk=a.item_id, check_kind="").update(n_reserved=F("n_reserved") - 1)
    a.status = Assignment.Status.SKIPPED
    a.skipped_at = now
    a.save(update_fields=["status", "skipped_at"])


def assignment_previous(
    *, study: Study, rater: Rater, before: Assignment | None = None
) -> Assignment | None:
    """The rater's submitted assignment just before `before` (or their latest), among their
    RECENT_EDITS latest submissions; a repeated one is passed over (is_repeated)."""
    recent = list(
        Assignment.objects.filter(study=study, rater=rater, status=Assignment.Status.SUBMITTED)
        .annotate(repeated=Exists(Assignment.objects.filter(repeat_of=OuterRef("pk"))))
        .order_by("-seq")
        .values_list("pk", "seq", "repeated")[:RECENT_EDITS]
    )
    for pk, seq, repeated in recent:
        if not repeated and (before is None or seq < before.seq):
            return Assignment.objects.get(pk=pk)
    return None
