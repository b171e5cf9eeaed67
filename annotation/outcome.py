"""Where a rater stands at the end of a study, and which crowd code (if any) they have earned.

The rule (docs/annotators.md, "Completion codes"):
- quota met (the pool has a quota and the rater submitted at least that many ratings, repeats
  included, an edit counted once) -> the completion code;
- no more work for this rater (every item they have not seen has its N ratings or is held by
  live leases of others, or the study is closed) and no open item of theirs:
    - after skipping more items than they rated: no code (skipping through the study would
      otherwise earn one);
    - with no quota for the pool and at least one rating: the completion code (without a quota,
      rating until nothing is left is the whole job);
    - otherwise the no-more-work code when the organizer set one (a worker who arrives after
      the study is full gets this), else no code and a "study full" page;
- anything else (an item open, work left, a paused study) -> no code, and what is left.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from annotation.engine import assignments_expire
from annotation.engine_sql import sql
from annotation.models import Assignment, Rater, Study
from annotation.progress import rater_status_count, rater_submitted_count

QUOTA_MET = "quota_met"
NO_MORE_WORK = "no_more_work"
ITEM_OPEN = "item_open"
WORK_LEFT = "work_left"
PAUSED = "paused"


@dataclass(frozen=True)
class Outcome:
    state: str
    done: int
    quota: int | None
    code: str = ""
    code_kind: str = ""  # "completion" or "no_more_work"
    skipped_most: bool = False  # out of work after skipping more items than they rated

    @property
    def left(self) -> int | None:
        return None if self.quota is None else max(0, self.quota - self.done)


def has_new_work(*, study: Study, rater: Rater) -> bool:
    """Is there an item this rater was never exposed to that still has room for a rating?"""
    return bool(
        sql(
            "SELECT 1 FROM annotation_item i WHERE i.study_id = %s AND i.check_kind = '' "
            "AND i.n_ratings + i.n_reserved < %s AND NOT EXISTS ("
            " SELECT 1 FROM annotation_assignment a"
            " WHERE a.item_id = i.id AND a.rater_id = %s AND NOT a.is_repeat) LIMIT 1",
            [study.pk, study.ratings_per_item, rater.pk],
        )
    )


def _has_open_item(*, study: Study, rater: Rater) -> bool:
    """The rater's latest exposure is open, or lapsed but its item still has room (the engine
    gives it back to them)."""
    row = sql(
        "SELECT a.status, a.is_repeat, i.n_ratings + i.n_reserved FROM annotation_assignment a "
        "JOIN annotation_item i ON i.id = a.item_id "
        "WHERE a.study_id = %s AND a.rater_id = %s ORDER BY a.seq DESC LIMIT 1",
        [study.pk, rater.pk],
    )
    if not row:
        return False
    status, is_repeat, load = row[0]
    if status == Assignment.Status.SERVED:
        return True
    return status == Assignment.Status.EXPIRED and (is_repeat or load < study.ratings_per_item)


def rater_outcome(*, study: Study, rater: Rater, now: datetime | None = None) -> Outcome:

    done = rater_submitted_count(study=study, rater=rater)
    quota = study.quota_for(rater.pool)
    crowd = rater.pool == Rater.Pool.CROWD
    if quota is not None and done >= quota:
        return Outcome(QUOTA_MET, done, quota, *_code(study.completion_code, "completion", crowd))
    if study.status == Study.Status.PAUSED:
        return Outcome(PAUSED, done, quota)
    if study.status == Study.Status.LIVE:
        if _has_open_item(study=study, rater=rater):
            return Outcome(ITEM_OPEN, done, quota)
        # Lapsed leases of others are work too: reclaim them before saying there is none.
        if has_new_work(study=study, rater=rater) or (
            assignments_expire(study=study, now=now or timezone.now())
            and has_new_work(study=study, rater=rater)
        ):
            return Outcome(WORK_LEFT, done, quota)
    if rater_status_count(study=study, rater=rater, status=Assignment.Status.SKIPPED) > done:
        # Skips leave a rater with nothing new as surely as ratings do; skipping through the
        # study is not the job, so it earns no code. A skip now and then changes nothing.
        return Outcome(NO_MORE_WORK, done, quota, skipped_most=True)
    if quota is None and done > 0:
        code = _code(study.completion_code, "completion", crowd)
    else:
        code = _code(study.no_more_work_code, "no_more_work", crowd)
    return Outcome(NO_MORE_WORK, done, quota, *code)


def _code(code: str, kind: str, crowd: bool) -> tuple[str, str]:
    return (code, kind) if crowd and code else ("", "")
