"""A rating that could not be submitted (the study was paused or closed while the annotator was on
the item) is kept as a draft in the annotator's session and filled back in when they return to the
item, so the stars they just gave are not lost. Nothing is written to the database: a draft is
not a rating, and the statistics never see it.

Only well-formed values are kept (criterion keys and ASCII digits, a known pairwise choice); the
number of drafts per session is capped. The assignment's reservation is what brings the annotator
back to the same item: when it lapses, the item goes to someone else and the draft is dropped.
"""

from __future__ import annotations

import re

from django.http import HttpRequest

SESSION_DRAFTS = "annotation_drafts"
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
    drafts = request.session.get(SESSION_DRAFTS)
    if not drafts or str(assignment_pid) not in drafts:
        return None
    drafts = dict(drafts)
    draft = drafts.pop(str(assignment_pid))
    request.session[SESSION_DRAFTS] = drafts
    return draft
