"""Sign-in with a cap on failed attempts per client address.

Django's login page and the admin's sign-in try every password they are sent, so a stranger could
guess an organizer's password at the speed of the server. Failed sign-ins are counted per client
address (annotation.net.limit_key: an IPv6 client by its /64) over the last hour; past
LOGIN_FAILURES_PER_HOUR the form refuses before any password is checked, with a message saying
when to come back (HTTP 429 on the login page). The hour slides: the failures of this clock hour
count in full and those of the hour before in the share of it that is still less than an hour
ago, so a guesser cannot spend a whole cap just before the hour turns and another just after. A correct password does not reset the count, and
the cap is per address, not per account: a stranger cannot lock an organizer out by failing in
their name from elsewhere.
"""

from __future__ import annotations

import math
import time
from typing import Any

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.utils.translation import ngettext

from annotation.net import limit_key
from config.redis_cache import hit

TOO_MANY = "too_many_failures"


def _key(request, hour: int | None = None) -> str:
    hour = int(time.time() // 3600) if hour is None else hour
    return f"login-failed:{limit_key(request)}:{hour}"


def _cap() -> int:
    return int(getattr(settings, "LOGIN_FAILURES_PER_HOUR", 30))


def _counts(request) -> tuple[int, int, float]:
    """(failures this clock hour, failures the hour before, share of this hour gone)."""
    now = time.time()
    hour = int(now // 3600)
    got = cache.get_many([_key(request, hour), _key(request, hour - 1)])
    return (
        int(got.get(_key(request, hour)) or 0),
        int(got.get(_key(request, hour - 1)) or 0),
        (now % 3600) / 3600,
    )


def wait_minutes(current: int, previous: int, gone: float, cap: int) -> int:
    """Whole minutes until one more failure would keep the sliding count, current + previous x
    (1 - gone), within cap (no new failure meanwhile); 0 when it already would."""
    room = cap - 1  # what the count may be before an attempt
    if current + previous * (1 - gone) <= room:
        return 0
    if current <= room:  # the hour before fades out within this hour
        hours = (1 - gone) - (room - current) / previous
    else:  # this hour's failures must fade out in the next one
        hours = (1 - gone) + (1 - room / current)
    return max(1, math.ceil(hours * 60 - 1e-9))


def refused(request) -> int:
    """Minutes this address must wait before its next sign-in attempt counts (0: none): it
    failed as often as the last hour allows."""
    cap = _cap()
    if request is None or cap <= 0:
        return 0
    return wait_minutes(*_counts(request), cap)


class LimitedLoginMixin(AuthenticationForm):
    """clean() refuses a capped address before the password is checked, and counts a failure."""

    def clean(self) -> dict[str, Any]:
        minutes = refused(self.request)
        if minutes:
            message = ngettext(
                "Too many failed sign-ins from your address. Try again in %(minutes)d minute.",
                "Too many failed sign-ins from your address. Try again in %(minutes)d minutes.",
                minutes,
            )
            raise ValidationError(message % {"minutes": minutes}, code=TOO_MANY)
        try:
            return super().clean()
        except ValidationError:
            if self.request is not None and _cap() > 0:
                hit(_key(self.request), 7300)  # read again as the hour before
            raise


class LimitedAuthenticationForm(LimitedLoginMixin, AuthenticationForm):
    pass


class LimitedAdminAuthenticationForm(LimitedLoginMixin, AdminAuthenticationForm):
    pass


class LoginView(auth_views.LoginView):
    form_class = LimitedAuthenticationForm

    def form_invalid(self, form) -> HttpResponse:
        response = super().form_invalid(form)
        if any(e.code == TOO_MANY for e in form.non_field_errors().as_data()):
            response.status_code = 429
        return response
