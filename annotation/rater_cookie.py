"""Which rater this browser is in a study, from a signed cookie instead of the session.

A crowd or public rater is remembered in the session ({study: rater id}); reading it costs every
request of the item screen a session read (a Redis GET and its decoding). When the session
learns the rater, the browser also gets `rater_<study public id>`: the rater's id, signed
(HMAC with SECRET_KEY, TimestampSigner) with a salt that names the study and the session's key.
So the cookie
- cannot be forged or altered (the signature);
- names one rater in one study: it opens that rater's exposures and nobody else's, and copied
  under another study's name it does not verify;
- is good only next to the session cookie it was issued with: copied into another browser, or
  kept after the session was flushed (logout) or cycled (login), it no longer verifies;
- expires with the session's age (SESSION_COOKIE_AGE), HttpOnly, SameSite=Lax, Secure as the
  session cookie is.
It only ever confirms what the session said when the cookie was set; the session stays the
authority, and a request whose cookie does not verify asks the session as before.

The cookie also says whether the session was anonymous (nobody logged in) when it was set. A
login always gives the session a new key (django.contrib.auth.login cycles or flushes it), which
the cookie does not survive; so while it verifies, an anonymous session is still anonymous, and
the item page can show a crowd worker's item without reading the session.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.core import signing
from django.http import HttpRequest, HttpResponse

_SALT = "annotation.rater-cookie"
_PENDING = "_rater_cookies"  # on the request: {study public id: rater id} to set on the response
_ANONYMOUS = "/anon"  # after the rater id: the session had nobody logged in


def cookie_name(study_pid: str) -> str:
    return f"rater_{study_pid}"


def _signer(study_pid: str, session_key: str) -> signing.TimestampSigner:
    return signing.TimestampSigner(salt=f"{_SALT}:{study_pid}:{session_key}")


def verified(request: HttpRequest, study_pid: str) -> tuple[int, bool] | None:
    """(rater id, whether the session was anonymous) from a valid cookie, else None."""
    value = request.COOKIES.get(cookie_name(study_pid))
    session_key = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    if not value or not session_key:
        return None
    try:
        raw = _signer(study_pid, session_key).unsign(value, max_age=settings.SESSION_COOKIE_AGE)
    except signing.BadSignature:  # also an expired signature
        return None
    anonymous = raw.endswith(_ANONYMOUS)
    raw = raw.removesuffix(_ANONYMOUS)
    return (int(raw), anonymous) if raw.isascii() and raw.isdigit() else None


def remember(request: HttpRequest, study_pid: str, rater_pk: int) -> None:
    """The session now names this rater: the response will carry the matching cookie
    (with_rater_cookies). A new session gets its key now, which the cookie is bound to."""
    if request.session.session_key is None:
        request.session.save()
    pending = getattr(request, _PENDING, None)
    if pending is None:
        pending = {}
        setattr(request, _PENDING, pending)
    pending[study_pid] = rater_pk


def with_rater_cookies(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """Set the cookies remember() asked for on this request's response."""
    session_key = request.session.session_key
    anonymous = _ANONYMOUS if SESSION_KEY not in request.session else ""
    for study_pid, rater_pk in getattr(request, _PENDING, {}).items():
        if session_key is None:  # the session was flushed after remember(): nothing to bind
            break
        response.set_cookie(
            cookie_name(study_pid),
            _signer(study_pid, session_key).sign(f"{rater_pk}{anonymous}"),
            max_age=settings.SESSION_COOKIE_AGE,
            httponly=True,
            samesite="Lax",
            secure=settings.SESSION_COOKIE_SECURE,
        )
    return response


def sets_rater_cookies(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """For the views that remember a rater (crowd entry, public sign-up): their response
    carries the cookies."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return with_rater_cookies(request, view(request, *args, **kwargs))

    return wrapped
