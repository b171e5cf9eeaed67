"""A rating that could not be submitted (the study was paused or closed while the annotator was on
the item) is kept as a draft in the annotator's session and filled back in when they return to the
item, so the stars they just gave are not lost. Nothing is written to the database: a draft is
not a rating, and the statistics never see it.

Only well-formed values are kept (criterion keys and ASCII digits, a known pairwise choice); the
number of drafts per session is capped. The assignment's reservation is what brings the annotator
back to the same item: when it lapses, the item goes to someone else and the draft is dropped.

A browser that has a draft also gets a cookie saying so (DRAFT_HINT, no content): the item page
reads the session for drafts only when it is there, so a crowd worker's page can be shown without
reading the session at all (annotation/rater_cookie.py). The hint decides nothing but whether to
look: without it a draft is not filled in, with it the session is read as before.
"""

from __future__ import annotations

import re

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.translation import gettext as _

from annotation.htmx import HtmxHttpRequest, leave

SESSION_DRAFTS = "annotation_drafts"
DRAFT_HINT = "annotation_draft"  # a cookie: this browser's session may hold drafts
MAX_DRAFTS = 20
_KEY = re.compile(r"^c_[A-Za-z0-9_-]{1,64}$")
_SCORE = re.compile(r"^[0-9]{1,3}$")
CHOICES = {"left", "right", "tie", "both_bad"}


def _clean(post) -> dict[str, str]:
    draft = {k: v for k, v in post.items() if _KEY.match(k) and _SCORE.match(v or "")}
    if post.get("choice") in CHOICES:
        draft["choice"] = post["choice"]
    return draft


def draft_save(request: HttpRequest, *, assignment_pid, post) -> bool:
    """Keep what was posted for this assignment. Returns whether anything was kept."""
    draft = _clean(post)
    if not draft:
        return False
    drafts = dict(request.session.get(SESSION_DRAFTS, {}))
    drafts.pop(str(assignment_pid), None)
    drafts[str(assignment_pid)] = draft
    # Oldest first (dicts keep insertion order): drop the oldest beyond the cap.
    while len(drafts) > MAX_DRAFTS:
        drafts.pop(next(iter(drafts)))
    request.session[SESSION_DRAFTS] = drafts
    return True


def draft_pop(request: HttpRequest, *, assignment_pid) -> dict[str, str] | None:
    """The draft of this assignment, removed from the session (it is shown once, in the form)."""
    if DRAFT_HINT not in request.COOKIES:  # no draft was kept in this browser: not read
        return None
    drafts = request.session.get(SESSION_DRAFTS)
    if not drafts or str(assignment_pid) not in drafts:
        return None
    drafts = dict(drafts)
    draft = drafts.pop(str(assignment_pid))
    request.session[SESSION_DRAFTS] = drafts
    return draft


def posted_int(value: str) -> int | None:
    """A posted non-negative number, or None: ASCII digits only ('²' and '٣' pass isdigit()),
    at most 12 of them (the engine clamps the value anyway)."""
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 12 else None


def draft_refuse(request: HtmxHttpRequest, *, assignment, post) -> HttpResponse:
    """The study stopped taking ratings while the annotator was on the item: nothing is recorded,
    what they gave is kept as a draft, and the browser goes to the study page with a message."""
    saved = draft_save(request, assignment_pid=assignment.public_id, post=post)
    if saved:
        messages.warning(
            request,
            _(
                "The study stopped taking ratings (it was paused or closed) before yours was "
                "saved. It was not recorded: it is kept as a draft and filled in again if you "
                "come back to this item."
            ),
        )
    else:
        messages.error(request, _("This study is not running right now."))
    response = leave(request, reverse("annotate:study", args=[assignment.study.public_id]))
    if saved:
        response.set_cookie(
            DRAFT_HINT,
            "1",
            max_age=settings.SESSION_COOKIE_AGE,
            httponly=True,
            samesite="Lax",
            secure=settings.SESSION_COOKIE_SECURE,
        )
    return response
