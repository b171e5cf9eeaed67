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
- Hidden repeats: about study.repeat_rate of what a rater is served, never two in a row and at
  least REPEAT_GAP exposures after the original; pairwise repeats swap the sides. Repeats reserve
  nothing and never count toward N.
- Lock order is always rater -> assignment -> item, so the services cannot deadlock each other.
"""

from __future__ import annotations

import random
import uuid
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation import engine_sql, inputs, leases
from annotation.models import (
    SHUFFLE_MAX,
    Assignment,
    Criterion,
    Item,
    PairChoice,
    Rater,
    Rating,
    Rubric,
    Score,
    Study,
)
from annotation.progress import (  # noqa: F401 (re-exported for the pages and the API)
    RaterProgress,
    rater_progress,
    rater_submitted_count,
    study_progress,
)

# At least this many other exposures between an item and its hidden repeat.
REPEAT_GAP = 5
# How many of their latest submissions an annotator may go back to and change.
RECENT_EDITS = 10
# What the annotator clicks (sides as shown) -> the canonical choice, given left_is_a.
DISPLAY_CHOICES = ("left", "tie", "both_bad", "right")

_rng = random.SystemRandom()

# The hot path's statements are plain SQL (see annotation/engine_sql.py).
_uses_row_locks = engine_sql.uses_row_locks
_lock = engine_sql.lock
_sql = engine_sql.sql
_for_update = engine_sql.for_update
_db = engine_sql.db_value


class StudyUnavailable(Exception):
    """The study is not live (draft, paused or closed)."""


class NotAdmitted(Exception):
    """The study does not admit this rater's pool."""


class AssignmentGone(Exception):
    """The assignment cannot take a rating any more (skipped, or expired and given away)."""


def check_admission(*, study: Study, rater: Rater) -> None:
    if study.status != Study.Status.LIVE:
        raise StudyUnavailable(study.status)
    if rater.kind != Rater.Kind.HUMAN or not study.admits(rater.pool):
        raise NotAdmitted(rater.pool)


def _hint_for(study: Study, rng: random.Random) -> bool:
    if study.hint_policy == Study.HintPolicy.SHOWN:
        return True
    if study.hint_policy == Study.HintPolicy.RANDOM:
        return rng.random() < 0.5
    return False


# The hot query on PostgreSQL: pick the first unlocked item of one load level at or after a
# point in shuffle order that this rater was never exposed to, and reserve it, in one round trip.
# The expression matches the item_pick index; FOR UPDATE re-checks the load on the newest row
# version, SKIP LOCKED passes over rows other annotators are taking right now.
_PICK_SQL = """
WITH pick AS (
    SELECT i.id FROM annotation_item i
    WHERE i.study_id = %(study)s
      AND (i.n_ratings + i.n_reserved) = %(level)s
      AND i.shuffle >= %(lo)s AND i.shuffle < %(hi)s
      AND NOT EXISTS (
          SELECT 1 FROM annotation_assignment a
          WHERE a.item_id = i.id AND a.rater_id = %(rater)s AND NOT a.is_repeat
      )
    ORDER BY i.shuffle
    LIMIT 1
    FOR UPDATE OF i SKIP LOCKED
)
UPDATE annotation_item SET n_reserved = annotation_item.n_reserved + 1
FROM pick WHERE annotation_item.id = pick.id
RETURNING annotation_item.id
"""


def _reserve_item(*, study: Study, rater: Rater, rng: random.Random) -> int | None:
    """Pick and reserve one item: the lowest load level first, a random item within it. Returns
    the item id with n_reserved already incremented, or None when nothing is left for this rater."""
    if _uses_row_locks():
        with connection.cursor() as cursor:
            for level in range(study.ratings_per_item):
                pivot = rng.randrange(SHUFFLE_MAX)
                for lo, hi in ((pivot, SHUFFLE_MAX + 1), (0, pivot)):
                    cursor.execute(
                        _PICK_SQL,
                        {"study": study.pk, "level": level, "lo": lo, "hi": hi, "rater": rater.pk},
                    )
                    row = cursor.fetchone()
                    if row is not None:
                        return row[0]
        return None
    # Elsewhere (SQLite: one writer at a time) the same pick through the ORM.
    seen = Assignment.objects.filter(item=OuterRef("pk"), rater=rater, is_repeat=False)
    base = (
        Item.objects.filter(study=study)
        .alias(load=F("n_ratings") + F("n_reserved"))
        .filter(~Exists(seen))
    )
    for level in range(study.ratings_per_item):
        pivot = rng.randrange(SHUFFLE_MAX)
        for half in (Q(shuffle__gte=pivot), Q(shuffle__lt=pivot)):
            item_id = (
                base.filter(half, load=level)
                .order_by("shuffle")
                .values_list("pk", flat=True)
                .first()
            )
            if item_id is not None:
                Item.objects.filter(pk=item_id).update(n_reserved=F("n_reserved") + 1)
                return item_id
    return None


def _repeat_origin(*, study: Study, rater: Rater, seq: int, rng: random.Random):
    """A submitted first exposure at least REPEAT_GAP back that was never repeated."""
    already = Assignment.objects.filter(repeat_of=OuterRef("pk"))
    candidates = list(
        Assignment.objects.filter(
            study=study,
            rater=rater,
            status=Assignment.Status.SUBMITTED,
            is_repeat=False,
            seq__lte=seq - REPEAT_GAP - 1,
        )
        .filter(~Exists(already))
        .order_by("-seq")
        .values("pk", "item_id", "left_is_a", "hint_shown")[:200]
    )
    return rng.choice(candidates) if candidates else None


@transaction.atomic
def assignment_next(
    *,
    study: Study,
    rater: Rater,
    now: datetime | None = None,
    rng: random.Random | None = None,
    client_tag: str = "",
) -> Assignment | None:
    """The rater's open assignment if they have one, else a new exposure: a hidden repeat (about
    study.repeat_rate of the time) or a freshly reserved item. None when there is nothing left for
    this rater (quota reached or every item has its N ratings or was seen by them).

    client_tag (leases.client_tag of the request's address) caps open reservations per address
    for crowd and public raters: leases.AddressBusy when that address holds its share."""
    return _next(
        study=study, rater=rater, now=now or timezone.now(), rng=rng or _rng, client_tag=client_tag
    )


def _lock_rater(rater: Rater) -> None:
    # One request per rater at a time: double clicks and parallel tabs queue here. Always the
    # first lock a service takes (rater -> assignment -> item), so services cannot deadlock.
    _sql(f"SELECT id FROM annotation_rater WHERE id = %s{_for_update()}", [rater.pk])


def _next(
    *,
    study: Study,
    rater: Rater,
    now: datetime,
    rng: random.Random,
    rater_locked: bool = False,
    client_tag: str = "",
    resubmitted_seq: int | None = None,
) -> Assignment | None:
    check_admission(study=study, rater=rater)
    if not rater_locked:
        _lock_rater(rater)

    # Only the latest exposure can be open: next always resumes an open one before creating.
    last = _sql(
        "SELECT id, seq, status, is_repeat, item_id FROM annotation_assignment "
        f"WHERE study_id = %s AND rater_id = %s ORDER BY seq DESC LIMIT 1{_for_update()}",
        [study.pk, rater.pk],
    )
    last_pk, last_seq, last_status, last_is_repeat, last_item = (
        last[0] if last else (None, 0, None, False, None)
    )
    resumed = _resume(
        study=study, now=now, pk=last_pk, status=last_status, item_id=last_item,
        is_repeat=last_is_repeat,
    )  # fmt: skip
    if resumed is not None:
        return resumed
    if resubmitted_seq is not None and resubmitted_seq == last_seq:
        # A second submit of the rater's latest exposure (a double click, a retry, an edit from
        # the end page): its first submit found nothing to serve, so this one answers the same.
        return None

    quota = study.quota_for(rater.pool)
    if quota is not None and rater_submitted_count(study=study, rater=rater) >= quota:
        return None
    leases.check_address(study=study, rater=rater, tag=client_tag, now=now)
    exposure = {
        "study": study,
        "rater": rater,
        "seq": last_seq + 1,
        "served_at": now,
        "expires_at": leases.now_plus(study, now),
        "client_tag": client_tag if rater.pool in leases.CAPPED_POOLS else "",
    }

    return _new_exposure(
        study=study, rater=rater, exposure=exposure, last_is_repeat=last_is_repeat, rng=rng
    )


def _new_exposure(*, study: Study, rater: Rater, exposure: dict, last_is_repeat: bool, rng):
    """A hidden repeat (at the study's rate) or a freshly reserved item; None if nothing is left."""
    now, last_seq = exposure["served_at"], exposure["seq"] - 1
    # Never two repeats in a row; the draw happens only when a repeat is allowed.
    if (
        study.repeat_rate > 0
        and not last_is_repeat
        and rng.random() < study.repeat_rate
        and (origin := _repeat_origin(study=study, rater=rater, seq=last_seq + 1, rng=rng))
        is not None
    ):
        return _repeat_create(study=study, rater=rater, origin=origin, exposure=exposure, rng=rng)

    item_id = _reserve_or_reclaim(study=study, rater=rater, now=now, rng=rng)
    if item_id is None:
        return None
    return _exposure_create(
        **exposure,
        item_id=item_id,
        left_is_a=rng.random() < 0.5 if study.mode == Rubric.Mode.PAIRWISE else True,
        hint_shown=_hint_for(study, rng),
    )


def _resume(*, study: Study, now: datetime, pk, status, item_id, is_repeat) -> Assignment | None:
    """The open item is never lost: a live lease is resumed and renewed, a lapsed one taken back
    while its item still has room (e.g. after a long detour through Previous)."""
    if status == Assignment.Status.SERVED or (
        status == Assignment.Status.EXPIRED
        and leases.retake(
            study=study, assignment_id=pk, item_id=item_id, is_repeat=is_repeat, now=now
        )
    ):
        resumed = Assignment.objects.get(pk=pk)
        if resumed.status == Assignment.Status.SERVED:
            resumed.expires_at = leases.now_plus(study, now)
            resumed.save(update_fields=["expires_at"])
        return resumed
    return None


def _reserve_or_reclaim(*, study: Study, rater: Rater, now: datetime, rng) -> int | None:
    """Reserve an item; when none is free, reclaim lapsed leases first and try once more."""
    item_id = _reserve_item(study=study, rater=rater, rng=rng)
    if item_id is None and assignments_expire(study=study, now=now):
        item_id = _reserve_item(study=study, rater=rater, rng=rng)
    return item_id


def _repeat_create(*, study: Study, rater: Rater, origin: dict, exposure: dict, rng):
    """A hidden repeat, served only where a new item would have been: when the study has nothing
    new left for this rater, the answer is None, as it is without the draw. Otherwise repeats
    would pile up among the few exposures of annotators who keep asking at the end of a study
    (where the excess over the study's rate came from; see docs/annotators.md)."""
    probe = _reserve_or_reclaim(study=study, rater=rater, now=exposure["served_at"], rng=rng)
    if probe is None:
        return None
    _sql("UPDATE annotation_item SET n_reserved = n_reserved - 1 WHERE id = %s", [probe])
    return _exposure_create(
        **exposure,
        item_id=origin["item_id"],
        # Pairwise repeats show the sides swapped; star items have one side.
        left_is_a=not origin["left_is_a"] if study.mode == Rubric.Mode.PAIRWISE else True,
        hint_shown=origin["hint_shown"],
        is_repeat=True,
        repeat_of_id=origin["pk"],
    )


_EXPOSURE_INSERT = (
    "INSERT INTO annotation_assignment (public_id, study_id, item_id, rater_id, seq, status, "
    "left_is_a, hint_shown, is_repeat, repeat_of_id, served_at, expires_at, client_tag) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"
)


def _exposure_create(*, is_repeat: bool = False, repeat_of_id: int | None = None, **fields):
    """Insert an exposure (one statement) and return it as a model instance."""
    a = Assignment(
        public_id=uuid.uuid4(),
        status=Assignment.Status.SERVED,
        is_repeat=is_repeat,
        repeat_of_id=repeat_of_id,
        **fields,
    )
    a.pk = _sql(
        _EXPOSURE_INSERT,
        [
            _db(Assignment, "public_id", a.public_id),
            a.study_id,
            a.item_id,
            a.rater_id,
            a.seq,
            a.status,
            a.left_is_a,
            a.hint_shown,
            a.is_repeat,
            a.repeat_of_id,
            _db(Assignment, "served_at", a.served_at),
            _db(Assignment, "expires_at", a.expires_at),
            a.client_tag,
        ],
    )[0][0]
    a._state.adding = False
    a._state.db = connection.alias
    return a


@transaction.atomic
def assignments_expire(*, study: Study | None = None, now: datetime | None = None) -> int:
    """Expire lapsed reservations and return their items to the pool. Returns how many."""
    now = now or timezone.now()
    qs = Assignment.objects.filter(status=Assignment.Status.SERVED, expires_at__lte=now)
    if study is not None:
        qs = qs.filter(study=study)
    if _uses_row_locks():
        qs = qs.select_for_update(skip_locked=True)
    rows = list(qs.order_by("pk").values_list("pk", "item_id", "is_repeat")[:5000])
    if not rows:
        return 0
    Assignment.objects.filter(pk__in=[r[0] for r in rows]).update(
        status=Assignment.Status.EXPIRED, expired_at=now
    )
    per_item: dict[int, int] = {}
    for _pk, item_id, is_repeat in rows:
        if not is_repeat:
            per_item[item_id] = per_item.get(item_id, 0) + 1
    for item_id in sorted(per_item):
        Item.objects.filter(pk=item_id).update(n_reserved=F("n_reserved") - per_item[item_id])
    return len(rows)


def criteria_for(rubric_id: int, question) -> list[Criterion]:
    rows = Criterion.objects.filter(rubric_id=rubric_id).order_by("order", "id")
    return [c for c in rows if c.applies(question)]


def _clean_scores(assignment: Assignment, scores: dict[str, object] | None) -> dict:
    if Assignment.item.is_cached(assignment):
        question = assignment.item.question
    else:
        question = Item.objects.select_related("question").get(pk=assignment.item_id).question
    criteria = criteria_for(assignment.study.rubric_id, question)
    scores = scores or {}
    errors: list[str] = []
    values = {}
    for c in criteria:
        raw = scores.get(c.key)
        label = c.label_en
        if raw in (None, ""):
            errors.append(_("Give a score for %(criterion)s.") % {"criterion": label})
            continue
        # Plain ASCII digits only: int() would take '٣' and '1_0' and fail on '²' (inputs.py).
        value = raw if type(raw) is int else inputs.small_int(raw)
        if value is None:
            errors.append(_("%(criterion)s: not a number.") % {"criterion": label})
            continue
        if not c.min_score <= value <= c.max_score:
            errors.append(
                _("%(criterion)s must be between %(lo)d and %(hi)d stars.")
                % {"criterion": label, "lo": c.min_score, "hi": c.max_score}
            )
            continue
        values[c] = value
    unknown = set(scores) - {c.key for c in criteria}
    if unknown:
        shown = [k[:40] for k in sorted(unknown)[:5]]
        errors.append(_("Unknown criteria: %(keys)s.") % {"keys": ", ".join(shown)})
    if errors:
        raise ValidationError(errors)
    return values


def canonical_choice(display_choice: str, *, left_is_a: bool) -> str:
    if display_choice == "left":
        return PairChoice.A if left_is_a else PairChoice.B
    if display_choice == "right":
        return PairChoice.B if left_is_a else PairChoice.A
    if display_choice == "tie":
        return PairChoice.TIE
    if display_choice == "both_bad":
        return PairChoice.BOTH_BAD
    raise ValidationError(_("Choose one of: left better, tie, both bad, right better."))


def display_choice(choice: str, *, left_is_a: bool) -> str:
    if choice == PairChoice.A:
        return "left" if left_is_a else "right"
    if choice == PairChoice.B:
        return "right" if left_is_a else "left"
    return choice


def _is_recent(assignment: Assignment) -> bool:
    later = Assignment.objects.filter(
        study_id=assignment.study_id,
        rater_id=assignment.rater_id,
        status=Assignment.Status.SUBMITTED,
        seq__gt=assignment.seq,
    ).count()
    return later < RECENT_EDITS


@transaction.atomic
def assignment_submit(
    *,
    assignment: Assignment,
    rater: Rater,
    scores: dict[str, object] | None = None,
    choice: str | None = None,
    active_ms: int | None = None,
    now: datetime | None = None,
) -> Rating:
    """Record (or, for a recent submitted assignment, update) the rater's answer.

    scores: criterion key -> stars (star studies); choice: left / right / tie / both_bad as shown
    (pairwise), stored canonically. Submitting the same assignment twice leaves one rating.
    """
    _lock_rater(rater)
    rating, _resubmitted = _submit(
        assignment=assignment,
        rater=rater,
        scores=scores,
        choice=choice,
        active_ms=active_ms,
        now=now or timezone.now(),
    )
    return rating


@transaction.atomic
def assignment_submit_and_next(
    *,
    assignment: Assignment,
    rater: Rater,
    scores: dict[str, object] | None = None,
    choice: str | None = None,
    active_ms: int | None = None,
    now: datetime | None = None,
    rng: random.Random | None = None,
    client_tag: str = "",
) -> tuple[Rating, Assignment | None]:
    """Submit and reserve what comes next in one transaction (one commit per item). Raises as
    assignment_submit does, before anything is written; a study that stopped running or stopped
    admitting this rater's pool takes no more ratings (StudyUnavailable / NotAdmitted).

    Submitting an assignment again (a double click, or an edit through Previous) changes the
    rating, counts nothing twice and answers with the rater's open item; when the assignment was
    their latest exposure, with what its first submit answered (see _next)."""
    now = now or timezone.now()
    check_admission(study=assignment.study, rater=rater)
    _lock_rater(rater)
    rating, resubmitted = _submit(
        assignment=assignment,
        rater=rater,
        scores=scores,
        choice=choice,
        active_ms=active_ms,
        now=now,
    )
    following = _next(
        study=assignment.study,
        rater=rater,
        now=now,
        rng=rng or _rng,
        rater_locked=True,
        client_tag=client_tag,
        resubmitted_seq=assignment.seq if resubmitted else None,
    )
    return rating, following


def _submit(
    *,
    assignment: Assignment,
    rater: Rater,
    scores: dict[str, object] | None,
    choice: str | None,
    active_ms: int | None,
    now: datetime,
) -> tuple[Rating, bool]:
    """The rating, and whether the assignment had been submitted before (an edit or a repeat
    of the same request)."""
    # Lock the exposure and read its state fresh (a double click waits here for the first).
    row = _sql(
        "SELECT status, item_id, is_repeat, left_is_a, seq, active_ms FROM annotation_assignment "
        f"WHERE id = %s AND rater_id = %s{_for_update()}",
        [assignment.pk, rater.pk],
    )
    if not row:
        raise Assignment.DoesNotExist
    a = assignment
    a.status, a.item_id, a.is_repeat, a.left_is_a, a.seq, a.active_ms = row[0]
    if a.study.mode == Rubric.Mode.PAIRWISE:
        canonical = canonical_choice(choice or "", left_is_a=a.left_is_a)
        values = {}
    else:
        canonical = ""
        values = _clean_scores(a, scores)
    if active_ms is not None:
        active_ms = max(0, min(int(active_ms), 24 * 3600 * 1000))

    if a.status == Assignment.Status.SUBMITTED:
        return _edit(a, canonical=canonical, values=values, active_ms=active_ms, now=now), True
    if a.status == Assignment.Status.SKIPPED:
        raise AssignmentGone("skipped")

    if not a.is_repeat:
        if a.status == Assignment.Status.SERVED:
            _sql(
                "UPDATE annotation_item SET n_reserved = n_reserved - 1, "
                "n_ratings = n_ratings + 1 WHERE id = %s",
                [a.item_id],
            )
        else:  # expired: take the rating only if the item still has room for it
            taken = _sql(
                "UPDATE annotation_item SET n_ratings = n_ratings + 1 "
                "WHERE id = %s AND n_ratings + n_reserved < %s RETURNING id",
                [a.item_id, a.study.ratings_per_item],
            )
            if not taken:
                raise AssignmentGone("expired")
    rating = _rating_create(
        a, rater, canonical=canonical, values=values, active_ms=active_ms, now=now
    )
    return rating, False


def _rating_create(a: Assignment, rater: Rater, *, canonical, values, active_ms, now) -> Rating:
    """Mark the exposure submitted and write its rating and scores (plain SQL, hot path)."""
    a.status = Assignment.Status.SUBMITTED
    a.submitted_at = now
    a.active_ms = active_ms
    _sql(
        "UPDATE annotation_assignment SET status = %s, submitted_at = %s, active_ms = %s "
        "WHERE id = %s",
        [a.status, _db(Assignment, "submitted_at", now), active_ms, a.pk],
    )
    rating = Rating(
        assignment=a,
        item_id=a.item_id,
        rater=rater,
        choice=canonical,
        comment="",
        created_at=now,
        updated_at=now,
    )
    rating.pk = _sql(
        "INSERT INTO annotation_rating (assignment_id, item_id, rater_id, choice, comment, "
        "created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
        [a.pk, a.item_id, rater.pk, canonical, "", _db(Rating, "created_at", now),
         _db(Rating, "updated_at", now)],
    )[0][0]  # fmt: skip
    rating._state.adding = False
    rating._state.db = connection.alias
    if values:
        Score.objects.bulk_create(
            [Score(rating=rating, criterion=c, value=v) for c, v in values.items()]
        )
    return rating


def _edit(a: Assignment, *, canonical: str, values: dict, active_ms: int | None, now) -> Rating:
    """A second submit of a submitted assignment changes its one rating; counters stay put."""
    if not _is_recent(a):
        raise ValidationError(_("This rating is too old to change."))
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


@transaction.atomic
def assignment_skip(*, assignment: Assignment, rater: Rater, now: datetime | None = None) -> None:
    """Give the item back to others; this rater is never served it again (the exposure stays).
    A study that is not live (paused, closed) or no longer admits the rater's pool refuses it
    (StudyUnavailable / NotAdmitted) and nothing changes."""
    now = now or timezone.now()
    check_admission(study=assignment.study, rater=rater)
    _lock_rater(rater)
    a = _lock(Assignment.objects.filter(pk=assignment.pk, rater=rater)).first()
    if a is None:
        raise Assignment.DoesNotExist
    if a.status not in (Assignment.Status.SERVED, Assignment.Status.EXPIRED):
        return  # already skipped (a retry) or submitted (skipping an edit just moves on)
    if a.status == Assignment.Status.SERVED and not a.is_repeat:
        Item.objects.filter(pk=a.item_id).update(n_reserved=F("n_reserved") - 1)
    a.status = Assignment.Status.SKIPPED
    a.skipped_at = now
    a.save(update_fields=["status", "skipped_at"])


def assignment_previous(
    *, study: Study, rater: Rater, before: Assignment | None = None
) -> Assignment | None:
    """The rater's submitted assignment just before `before` (or their latest), among their
    RECENT_EDITS latest submissions."""
    recent = list(
        Assignment.objects.filter(study=study, rater=rater, status=Assignment.Status.SUBMITTED)
        .order_by("-seq")
        .values_list("pk", "seq")[:RECENT_EDITS]
    )
    for pk, seq in recent:
        if before is None or seq < before.seq:
            return Assignment.objects.get(pk=pk)
    return None
