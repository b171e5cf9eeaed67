"""Leases on open items: short, renewed by the annotator's activity, taken back when they lapse,
and capped per client address so that strangers cannot hold a study's open slots.

- A reservation is a lease of Study.reservation_timeout seconds (default 180). Every sign of life
  from its annotator renews it: a page view in the study, a submit, the item page's heartbeat.
- A lapsed lease is reclaimed (annotation.engine.assignments_expire) before anyone is refused,
  and its annotator gets the same item back on return if the item still has room (retake).
- One crowd or public identity holds at most one open item per study (the engine only ever keeps
  the latest exposure open); one client address holds at most ANNOTATION_OPEN_PER_ADDRESS
  (setting, default 4) across identities. Onsite accounts are vetted and share lab addresses,
  so the address cap leaves them alone.
- No exposure is held longer than ANNOTATION_MAX_HOLD seconds (setting, default 3600; 0 = no cap)
  from when it was first served: after that, renewals are refused, a lapsed lease is not taken
  back, and the annotator's next request for work lets the item go and serves another. So a
  script that keeps renewing cannot keep an item from its N ratings. A submit is still taken by
  the usual rules (a live lease, or a lapsed one while its item has room).
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection

from annotation.engine_sql import db_value, sql
from annotation.models import Assignment, Rater, Study

DEFAULT_OPEN_PER_ADDRESS = 4
DEFAULT_MAX_HOLD = 3600
CAPPED_POOLS = (Rater.Pool.CROWD, Rater.Pool.PUBLIC)


class AddressBusy(Exception):
    """This client address already holds as many open items in the study as it may."""


def client_tag(address: str) -> str:
    """A keyed hash of a client address: enough to count per address, useless to read one."""
    if not address:
        return ""
    key = settings.SECRET_KEY.encode()
    return hmac.new(key, b"annot-addr:" + address.encode(), hashlib.sha256).hexdigest()[:16]


def open_per_address() -> int:
    return int(getattr(settings, "ANNOTATION_OPEN_PER_ADDRESS", DEFAULT_OPEN_PER_ADDRESS))


def max_hold() -> timedelta | None:
    """How long one exposure may be held in all, from when it was served; None when uncapped."""
    seconds = int(getattr(settings, "ANNOTATION_MAX_HOLD", DEFAULT_MAX_HOLD))
    return timedelta(seconds=seconds) if seconds > 0 else None


def held_too_long(served_at: datetime, now: datetime) -> bool:
    """True once an exposure served at served_at has been held for ANNOTATION_MAX_HOLD."""
    cap = max_hold()
    return cap is not None and now >= served_at + cap


def renew(*, study: Study, rater: Rater, now: datetime) -> int:
    """Push the rater's open lease in this study forward; returns how many (0 or 1) it renewed.
    A lapsed lease that nobody has reclaimed yet still holds its item, so it is renewed too;
    one held for ANNOTATION_MAX_HOLD is not (it lapses as usual)."""
    expires = db_value(Assignment, "expires_at", now_plus(study, now))
    query = (
        "UPDATE annotation_assignment SET expires_at = %s "
        "WHERE rater_id = %s AND study_id = %s AND status = %s"
    )
    params = [expires, rater.pk, study.pk, Assignment.Status.SERVED]
    cap = max_hold()
    if cap is not None:
        query += " AND served_at > %s"
        params.append(db_value(Assignment, "served_at", now - cap))
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        return int(cursor.rowcount)


def release(*, assignment: Assignment, holds_place: bool, now: datetime) -> None:
    """Let an open exposure go now, as if its lease had lapsed: it is expired and its item's
    place goes back to the pool. The caller holds the rater's and the exposure's row locks."""
    sql(
        "UPDATE annotation_assignment SET status = %s, expired_at = %s WHERE id = %s",
        [
            Assignment.Status.EXPIRED,
            db_value(Assignment, "expired_at", now),
            assignment.pk,
        ],
    )
    if holds_place:
        sql(
            "UPDATE annotation_item SET n_reserved = n_reserved - 1 WHERE id = %s",
            [assignment.item_id],
        )


def retake(
    *, study: Study, assignment_id: int, item_id: int, is_repeat: bool, now: datetime
) -> bool:
    """Re-open the rater's latest exposure after its lease lapsed, if its item still has room
    (repeats hold no room). The caller holds the rater's and the exposure's row locks."""
    if not is_repeat:
        taken = sql(
            "UPDATE annotation_item SET n_reserved = n_reserved + 1 "
            "WHERE id = %s AND n_ratings + n_reserved < %s RETURNING id",
            [item_id, study.ratings_per_item],
        )
        if not taken:
            return False
    sql(
        "UPDATE annotation_assignment SET status = %s, expires_at = %s, expired_at = NULL "
        "WHERE id = %s",
        [
            Assignment.Status.SERVED,
            db_value(Assignment, "expires_at", now_plus(study, now)),
            assignment_id,
        ],
    )
    return True


def check_address(*, study: Study, rater: Rater, tag: str, now: datetime) -> None:
    """Refuse a new reservation when the client's address already holds its share of live leases
    in this study (lapsed ones do not count). Under simultaneous requests from one address the
    count can overshoot by the number of those requests; it never blocks anyone else."""
    cap = open_per_address()
    if not tag or cap <= 0 or rater.pool not in CAPPED_POOLS:
        return
    held = sql(
        "SELECT count(*) FROM annotation_assignment WHERE study_id = %s AND status = %s "
        "AND client_tag = %s AND expires_at > %s AND NOT is_repeat",
        [study.pk, Assignment.Status.SERVED, tag, db_value(Assignment, "expires_at", now)],
    )[0][0]
    if held >= cap:
        raise AddressBusy(held)


def now_plus(study: Study, now: datetime) -> datetime:
    return now + timedelta(seconds=study.reservation_timeout)
